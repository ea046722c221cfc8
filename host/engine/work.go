package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// triggerDeadline bounds work_kind.trigger, a call made for the creating
// transaction.
const triggerDeadline = protocol.InTransactionDeadlineMillis * time.Millisecond

// plan is what routing works out of a match before its transaction: the
// kind's policy, the display it may apply, and for a new Work its ID.
type plan struct {
	kind    protocol.WorkKind
	kindErr error
	// display is the match's own display, within the limits (nil keeps
	// the Work's current one); displayRefused says why it was dropped.
	display        *protocol.Display
	displayRefused string
	// shown is the Work the handler saw when it matched (the one the
	// Event names); nil for none.
	shown *protocol.WorkView
	// again is the display of the route asked once more, seeing the open
	// Work its keys reach; nil when it was not asked again.
	again   *displayPick
	newID   string
	trigger string
}

// plan checks a match: its kind against the handler's package and its
// display against the limits. shown is the Work the handler saw.
func (e *Engine) plan(v verdicts, shown *protocol.WorkView) plan {
	p := plan{newID: pebblekv.NewWorkID(), shown: shown}
	p.kind, p.kindErr = e.policy(v)
	p.display, p.displayRefused = checkDisplay(v.res.Display)
	return p
}

// askTrigger asks the kind's package, inside the creating transaction,
// which input of a new Work is its trigger; any failure, or an answer
// naming no input, is the first input.
func (e *Engine) askTrigger(ctx context.Context, v verdicts, p plan, ev pebblekv.Event) string {
	ctx, cancel := context.WithTimeout(ctx, triggerDeadline)
	defer cancel()
	var res protocol.WorkKindTriggerResult
	err := e.callInTx(ctx, v.owner, protocol.MethodWorkKindTrigger, protocol.WorkKindTriggerParams{
		Kind:   v.res.Kind,
		Work:   protocol.WorkView{ID: p.newID, Scope: ev.Scope, Kind: v.res.Kind, Keys: v.res.Keys, State: pebblekv.WorkPending, Display: p.display},
		Inputs: []protocol.Event{ev.Wire()},
	}, &res)
	if err != nil || res.Trigger != ev.ID {
		if err != nil {
			e.d.Logger.Warn("work_kind.trigger failed; the first input is the trigger", "kind", v.res.Kind, "err", err)
		}
		return ev.ID
	}
	return res.Trigger
}

// openWork is the open Work of scope holding one of keys, the first key
// first; nil for none.
func (e *Engine) openWork(scope string, keys []string) (*pebblekv.Work, error) {
	var out *pebblekv.Work
	err := e.d.DB.View(func(rd *pebblekv.Reader) error {
		w, found, err := findOpen(rd, scope, keys)
		if found {
			out = &w
		}
		return err
	})
	return out, err
}

func findOpen(rd *pebblekv.Reader, scope string, keys []string) (pebblekv.Work, bool, error) {
	for _, k := range keys {
		w, found, err := rd.WorkByKey(scope, k)
		if err != nil || found {
			return w, found, err
		}
	}
	return pebblekv.Work{}, false, nil
}

// decide writes what a verdict makes of ev in tx: the Work it joins or
// creates, and the decision to record (the caller writes it). Finding no
// open Work by key and creating one are this one transaction, and so is a
// trigger kind's work_kind.trigger for the Work it creates.
func (e *Engine) decide(ctx context.Context, tx *pebblekv.Tx, ev pebblekv.Event, v verdicts, p plan) (pebblekv.RouteDecision, error) {
	d := pebblekv.RouteDecision{Event: ev.ID, Scope: ev.Scope, State: pebblekv.RouteUnmatched,
		Reasons: v.reasons, Updated: e.d.Clock.Now()}
	switch {
	case v.refused != "":
		d.Reasons = append(d.Reasons, pebblekv.RouteReason{Route: -1, Reason: v.refused})
		return d, nil
	case v.matched < 0:
		return d, nil
	}
	d.Route, d.DisplayRefused = v.matched, p.displayRefused
	refuse := func(why string) (pebblekv.RouteDecision, error) {
		d.Reasons = slices.Clone(d.Reasons)
		d.Reasons[len(d.Reasons)-1].Error = why
		return d, nil
	}
	if p.kindErr != nil {
		return refuse(p.kindErr.Error())
	}
	w, found, err := findOpen(tx.Reader, ev.Scope, v.res.Keys)
	if err != nil {
		return d, err
	}
	if found {
		p.display, d.DisplayRefused = p.displayFor(w)
		if err := e.join(ctx, tx, &w, ev, v, p); err != nil {
			return d, err
		}
	} else {
		if why, err := e.refusal(tx.Reader, ev.Scope, v, p); err != nil || why != "" {
			if err != nil {
				return d, err
			}
			return refuse(why)
		}
		p.trigger = ev.ID
		if p.kind.Trigger {
			p.trigger = e.askTrigger(ctx, v, p, ev)
		}
		w = e.newWork(ev, v, p)
		if err := tx.PutWork(w); err != nil {
			return d, err
		}
		d.Created = true
	}
	d.State, d.Work = pebblekv.RouteRouted, w.ID
	return d, nil
}

// join routes ev to the open Work w: the input, the match's display (when
// it gave one within the limits), and its keys no other open Work holds.
// Whether ev already is an input is a point read: w.Inputs holds only the
// latest ones. A waiting Work's active Wait is woken by ev in the same
// transaction (when its owner's dependency filter matches it), so the
// Work's next attempt starts with ev as its wake.
func (e *Engine) join(ctx context.Context, tx *pebblekv.Tx, w *pebblekv.Work, ev pebblekv.Event, v verdicts, p plan) error {
	if dup, err := tx.HasWorkInput(w.ID, ev.ID); err != nil {
		return err
	} else if !dup {
		w.Inputs = append(w.Inputs, ev.ID)
	}
	if w.Trigger == "" {
		w.Trigger = ev.ID
	}
	if p.display != nil {
		w.Display = p.display
	}
	for _, k := range v.res.Keys {
		if slices.Contains(w.Keys, k) {
			continue
		}
		if _, held, err := tx.WorkByKey(w.Scope, k); err != nil {
			return err
		} else if !held {
			w.Keys = append(w.Keys, k)
		}
	}
	if err := e.wakeOnJoin(ctx, tx, w, ev); err != nil {
		return err
	}
	w.Updated = e.d.Clock.Now()
	return tx.PutWork(*w)
}

// refusal says why a match creates no Work: a timed kind in a dry run, or
// a run-once kind whose key already had one.
func (e *Engine) refusal(rd *pebblekv.Reader, scope string, v verdicts, p plan) (string, error) {
	if p.kind.Timed && e.d.DryRun {
		return fmt.Sprintf("dry run: Work of timed kind %q is not started", v.res.Kind), nil
	}
	if !p.kind.RunOnce {
		return "", nil
	}
	for _, k := range v.res.Keys {
		w, found, err := rd.WorkOfKind(scope, k, v.res.Kind)
		if err != nil {
			return "", err
		}
		if found {
			return fmt.Sprintf("run-once kind %q already had Work %s for key %q", v.res.Kind, w.ID, k), nil
		}
	}
	return "", nil
}

// newWork is the Work a match creates for ev.
func (e *Engine) newWork(ev pebblekv.Event, v verdicts, p plan) pebblekv.Work {
	now := e.d.Clock.Now()
	kind := v.res.Kind
	if v.owner == "" {
		kind = ManualKind
	}
	return pebblekv.Work{
		ID: p.newID, Scope: ev.Scope, Kind: kind, Keys: dedupe(v.res.Keys), State: pebblekv.WorkPending,
		Display: p.display, Binding: v.route.Binding, Context: v.res.Context, Grants: v.res.Grants,
		Created: now, Updated: now, Inputs: []string{ev.ID}, Trigger: p.trigger,
	}
}

func dedupe(keys []string) []string {
	var out []string
	for _, k := range keys {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// OperatorSource is the source of the Events an operator emits.
const OperatorSource = "operator"

// Emit accepts an operator's Event of type typ into scope, with data as its
// payload (schema "<type>.v1"), and wakes the router. The scope must be
// configured and enabled.
func (e *Engine) Emit(ctx context.Context, scope, typ string, data jsontext.Value) (pebblekv.Event, error) {
	sc, ok := scopeOf(e.d.Generation(), scope)
	switch {
	case scope == "":
		return pebblekv.Event{}, protocol.Errorf(protocol.ErrInvalid, "an Event needs a scope; name one of the configured scopes")
	case !ok:
		return pebblekv.Event{}, protocol.Errorf(protocol.ErrNotFound, "scope %q is not configured; 'open-conduit config show' lists the scopes", scope)
	case sc.Disabled:
		return pebblekv.Event{}, protocol.Errorf(protocol.ErrInvalid, "scope %q is disabled, so nothing new routes in it; enable it in the config first", scope)
	case typ == "":
		return pebblekv.Event{}, protocol.Errorf(protocol.ErrInvalid, "an Event needs a type, such as %s", ManualRequest)
	}
	if len(data) == 0 {
		data = jsontext.Value("{}")
	}
	if !data.IsValid() {
		return pebblekv.Event{}, protocol.Errorf(protocol.ErrInvalid, "the Event's data is not valid JSON")
	}
	in := pebblekv.EventInput{
		Scope: scope, Source: OperatorSource, Type: typ, DeliveryID: rand.Text(),
		Payload: protocol.Payload{Schema: typ + ".v1", Data: data}, Time: e.d.Clock.Now(),
	}
	var ev pebblekv.Event
	err := e.d.DB.Update(func(tx *pebblekv.Tx) (err error) {
		ev, _, err = tx.Accept(in, e.d.Limits)
		return err
	})
	if err != nil {
		return pebblekv.Event{}, err
	}
	e.Notify()
	return ev, nil
}

// CancelWork cancels an open Work (pending, running or waiting) with the
// operator's reason: its active Wait is cancelled in the same transaction,
// and the scheduler stops its running execution (when the executor
// declares stop). Work in another state is protocol.ErrConflict naming
// it; an unknown ID is protocol.ErrNotFound.
func (e *Engine) CancelWork(ctx context.Context, id, reason string) (pebblekv.Work, error) {
	var w pebblekv.Work
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		var found bool
		var err error
		if w, found, err = tx.Work(id); err != nil {
			return err
		}
		if !found {
			return protocol.Errorf(protocol.ErrNotFound, "no Work %q; 'open-conduit work list' lists them", id)
		}
		if !w.Open() {
			return protocol.Errorf(protocol.ErrConflict, "Work %s is %s; only pending, running or waiting Work can be cancelled", id, w.State)
		}
		now := e.d.Clock.Now()
		wt, waits, err := tx.ActiveWait(id)
		if err != nil {
			return err
		}
		if err := cancelWait(tx, wt, waits, now); err != nil {
			return err
		}
		w.State, w.Reason, w.Updated = pebblekv.WorkCancelled, cancelReason(reason), now
		return tx.PutWork(w)
	})
	if err != nil {
		return pebblekv.Work{}, err
	}
	e.exec.kick()
	e.changes.broadcast()
	return w, nil
}

func cancelReason(reason string) string {
	if reason == "" {
		return "cancelled by the operator"
	}
	return "cancelled by the operator: " + reason
}
