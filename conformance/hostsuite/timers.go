package hostsuite

import (
	"time"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// timerChecks are the checks of timer.arm and timer.cancel.
var timerChecks = []check{
	{"TimerArmOfItsOwnIsKeptUntilCancelled", timerArmKeptUntilCancelled, TimerSetup},
	{"TimerArmRefusesWhatIsNotItsOwn", timerArmRefusals, TimerSetup},
}

// Recurrence is the recurrence kind TimerSetup's manifest declares.
const Recurrence = Extension + ".daily"

// TimerSetup is DefaultSetup with a manifest that declares Recurrence, so
// timer.arm and timer.cancel are enabled.
func TimerSetup() Setup {
	s := DefaultSetup()
	s.Manifest.Provides.Recurrences = []protocol.Recurrence{{Kind: Recurrence}}
	return s
}

// goodTimer is a timer the extension may arm: its family, its schema, its
// recurrence kind, a scope that uses it.
func goodTimer(id string) protocol.TimerArmParams {
	return protocol.TimerArmParams{
		ID: id, Scope: Scope, Due: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Family: Family,
		Payload:    protocol.Payload{Schema: Schema, Data: []byte(`{"n":1}`)},
		Recurrence: &protocol.RecurrenceRule{Kind: Recurrence, Rule: []byte(`{"at":"09:00"}`)},
	}
}

func (x *ext) arm(p protocol.TimerArmParams) error {
	_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.TimerArm, p)
	return err
}

func (x *ext) cancelTimer(id string) bool {
	x.Helper()
	res, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.TimerCancel, protocol.TimerCancelParams{ID: id})
	if err != nil {
		x.Fatalf("timer.cancel %q: %v", id, err)
	}
	return res.Cancelled
}

// timerArmKeptUntilCancelled: an armed timer (and one armed again under the
// same id) is there to cancel once; a one-shot timer (no recurrence) too.
func timerArmKeptUntilCancelled(x *ext) {
	if err := x.arm(goodTimer("nightly")); err != nil {
		x.Fatalf("arming its own timer: %v", err)
	}
	again := goodTimer("nightly")
	again.Due = again.Due.Add(time.Hour)
	if err := x.arm(again); err != nil {
		x.Fatalf("arming the same id again: %v", err)
	}
	once := goodTimer("once")
	once.Recurrence = nil
	if err := x.arm(once); err != nil {
		x.Fatalf("arming a one-shot timer: %v", err)
	}
	for _, id := range []string{"nightly", "once"} {
		if !x.cancelTimer(id) {
			x.Errorf("timer.cancel %q: cancelled false, want true: the armed timer was not kept", id)
		}
		if x.cancelTimer(id) {
			x.Errorf("timer.cancel %q a second time: cancelled true, want false", id)
		}
	}
	if x.cancelTimer("never-armed") {
		x.Errorf("timer.cancel of an id never armed: cancelled true")
	}
}

// timerArmRefusals: each timer that is not the extension's to arm is
// refused with its code, and nothing is kept.
func timerArmRefusals(x *ext) {
	cases := []struct {
		name string
		edit func(p *protocol.TimerArmParams)
		want *protocol.Error
	}{
		{"another extension's family", func(p *protocol.TimerArmParams) { p.Family = "other.seen" }, protocol.ErrUndeclared},
		{"an undeclared recurrence kind", func(p *protocol.TimerArmParams) { p.Recurrence.Kind = Extension + ".hourly" }, protocol.ErrUndeclared},
		{"another extension's recurrence kind", func(p *protocol.TimerArmParams) { p.Recurrence.Kind = "other.daily" }, protocol.ErrUndeclared},
		{"a scope that does not use it", func(p *protocol.TimerArmParams) { p.Scope = Unconfigured }, protocol.ErrNotFound},
		{"no scope", func(p *protocol.TimerArmParams) { p.Scope = "" }, protocol.ErrNotFound},
		{"an old payload schema", func(p *protocol.TimerArmParams) { p.Payload.Schema = SchemaOld }, protocol.ErrUnreadableSchema},
		{"no id", func(p *protocol.TimerArmParams) { p.ID = "" }, protocol.ErrInvalid},
		{"an id with a newline", func(p *protocol.TimerArmParams) { p.ID = "a\nb" }, protocol.ErrInvalid},
		{"no due time", func(p *protocol.TimerArmParams) { p.Due = time.Time{} }, protocol.ErrInvalid},
		{"no family", func(p *protocol.TimerArmParams) { p.Family = "" }, protocol.ErrInvalid},
	}
	for _, c := range cases {
		p := goodTimer("refused")
		c.edit(&p)
		x.wantCode("timer.arm with "+c.name, x.arm(p), c.want)
		if p.ID != "" && p.ID != "a\nb" && x.cancelTimer(p.ID) {
			x.Errorf("timer.arm with %s was refused, yet a timer was kept", c.name)
		}
	}
}
