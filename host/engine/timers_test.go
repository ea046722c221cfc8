package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// schedClock is a clock a test moves by hand; the scheduler's sleeps end
// when it passes their deadline.
type schedClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []schedWaiter
	slept   chan struct{} // told each time a sleep starts
	// schedSlept is told only when the scheduler's own loop starts a
	// sleep: the router and the reconciler sleep on the same clock, and a
	// test waiting for the scheduler must not take their sleep for its.
	schedSlept chan struct{}
}

type schedWaiter struct {
	at time.Time
	ch chan time.Time
}

func newSchedClock(now time.Time) *schedClock {
	return &schedClock{now: now, slept: make(chan struct{}, 1), schedSlept: make(chan struct{}, 1)}
}

func (c *schedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *schedClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, schedWaiter{at: c.now.Add(d), ch: ch})
	select {
	case c.slept <- struct{}{}:
	default:
	}
	if calledBySchedulerLoop() {
		select {
		case c.schedSlept <- struct{}{}:
		default:
		}
	}
	return ch
}

// calledBySchedulerLoop says the sleep being started is the scheduler's
// (timers.run), from the call stack: this clock is the test's, so it may
// look.
func calledBySchedulerLoop() bool {
	pcs := make([]uintptr, 8)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*timers).run") {
			return true
		}
		if !more {
			return false
		}
	}
}

// advance moves the clock and ends every sleep it passes.
func (c *schedClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// schedPackages runs one package, served in process over real pipes by the
// SDK against an in-memory host, as the engine's Packages.
type schedPackages struct {
	h    *sdktest.Harness
	m    *protocol.Manifest
	inTx atomic.Int64
}

func (p *schedPackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if pkg != p.m.Name {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	return p.h.Raw(ctx, method, params, result)
}

func (p *schedPackages) CallInTx(ctx context.Context, pkg, method string, params, result any) error {
	p.inTx.Add(1)
	ctx, cancel := context.WithTimeout(ctx, protocol.InTransactionDeadlineMillis*time.Millisecond)
	defer cancel()
	return p.Call(ctx, pkg, method, params, result)
}

func (p *schedPackages) Manifest(pkg string) (*protocol.Manifest, bool) {
	return p.m, pkg == p.m.Name
}
func (p *schedPackages) RouteHandlerOwner(string) string { return "" }
func (p *schedPackages) WorkKindOwner(string) (string, protocol.WorkKind) {
	return "", protocol.WorkKind{}
}
func (p *schedPackages) RecurrenceOwner(kind string) string {
	if p.m.Recurrence(kind) {
		return p.m.Name
	}
	return ""
}

// everyRule is the test recurrence's rule: every Seconds after the last
// occurrence, Times occurrences at most (0: no end).
type everyRule struct {
	Seconds int `json:"seconds"`
	Times   int `json:"times,omitzero"`
}

// tick is the payload of the test package's timers: the occurrence it is.
type tick struct {
	N int `json:"n"`
}

// clockExtension is a package with the family clock.tick and the recurrence
// kind clock.every; its recurrence.next fails while failures is above 0
// (counting down), as a package that crashed inside the transaction.
func clockExtension(failures *atomic.Int64) *sdk.Extension {
	return sdk.New("clock").
		EntryType("clock").
		Family("clock.tick", sdk.Loss("a missed tick is not sent again")).
		Schema("clock.tick", 1).
		Recurrence("clock.every", func(_ context.Context, _ *sdk.Request, p sdk.RecurrenceNextParams) (sdk.RecurrenceNextResult, error) {
			if failures.Add(-1) >= 0 {
				return sdk.RecurrenceNextResult{}, errors.New("crashed mid-transaction")
			}
			var r everyRule
			var last tick
			if err := json.Unmarshal(p.Rule, &r); err != nil {
				return sdk.RecurrenceNextResult{}, err
			}
			_ = json.Unmarshal(p.Payload.Data, &last)
			if r.Times > 0 && last.N >= r.Times {
				return sdk.RecurrenceNextResult{Done: true}, nil
			}
			data, _ := json.Marshal(tick{N: last.N + 1})
			return sdk.RecurrenceNextResult{
				Next:    p.After.Add(time.Duration(r.Seconds) * time.Second),
				Payload: &sdk.Payload{Schema: "clock.tick.v1", Data: data},
			}, nil
		})
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// schedRig is a scheduler on a real store, its own clock and the clock
// package.
type schedRig struct {
	t        *testing.T
	dir      string
	db       *pebblekv.DB
	clock    *schedClock
	pkgs     *schedPackages
	e        *Engine
	failures atomic.Int64
	stop     func()
}

func newSchedRig(t *testing.T) *schedRig {
	r := &schedRig{t: t, dir: t.TempDir(), clock: newSchedClock(t0)}
	x := clockExtension(&r.failures)
	r.pkgs = &schedPackages{h: sdktest.New(t, x), m: x.Manifest}
	r.open()
	return r
}

// open opens the store and starts the scheduler on it.
func (r *schedRig) open() {
	db, err := pebblekv.Open(r.dir, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.db = db
	r.e = New(Deps{DB: db, Packages: r.pkgs, Clock: r.clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.e.timers.run(ctx)
	}()
	r.stop = func() {
		cancel()
		<-done
		_ = db.Close()
	}
	r.t.Cleanup(func() { r.stop() })
}

// restart stops the scheduler and closes the store, as a daemon killed
// between firings, then opens both again.
func (r *schedRig) restart() {
	r.stop()
	r.open()
}

func (r *schedRig) arm(tm pebblekv.Timer) {
	r.t.Helper()
	tm.Owner = "clock"
	tm.ID = pebblekv.TimerID("clock", tm.ID)
	if err := r.db.Update(func(tx *pebblekv.Tx) error { return tx.PutTimer(tm) }); err != nil {
		r.t.Fatal(err)
	}
	r.e.TimersChanged()
}

// events are the Events the timers fired, in order.
func (r *schedRig) events() []pebblekv.Event {
	r.t.Helper()
	var out []pebblekv.Event
	if err := r.db.View(func(rd *pebblekv.Reader) error {
		var err error
		out, err = rd.Events(0, 100)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *schedRig) timer(id string) (pebblekv.Timer, bool) {
	r.t.Helper()
	var tm pebblekv.Timer
	var found bool
	_ = r.db.View(func(rd *pebblekv.Reader) error {
		var err error
		tm, found, err = rd.Timer(pebblekv.TimerID("clock", id))
		return err
	})
	return tm, found
}

// waitFor polls cond until it holds, failing after a generous deadline.
func (r *schedRig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle waits until the scheduler has gone to sleep since the call: it
// has looked at the store as it is now.
func (r *schedRig) settle() {
	r.t.Helper()
	r.clock.settle(r.t, r.e)
}

// settle wakes e's scheduler and waits until it has gone to sleep on c
// again.
func (c *schedClock) settle(t *testing.T, e *Engine) {
	t.Helper()
	select {
	case <-c.schedSlept:
	default:
	}
	e.TimersChanged()
	select {
	case <-c.schedSlept:
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler did not go back to sleep within 30s")
	}
}

func payload(n int) protocol.Payload {
	return protocol.Payload{Schema: "clock.tick.v1", Data: fmt.Appendf(nil, `{"n":%d}`, n)}
}

func rule(seconds, times int) *protocol.RecurrenceRule {
	raw, _ := json.Marshal(everyRule{Seconds: seconds, Times: times})
	return &protocol.RecurrenceRule{Kind: "clock.every", Rule: raw}
}

// TestSchedulerFiresAtDueAndRearmsThroughRecurrence: nothing fires before
// the due time; at it the Event is accepted (the timer's family, scope,
// payload and source, its due time as its time) and the timer rearmed at
// recurrence.next's answer with the payload it gave; the rule's end
// removes the timer.
func TestSchedulerFiresAtDueAndRearmsThroughRecurrence(t *testing.T) {
	r := newSchedRig(t)
	r.arm(pebblekv.Timer{ID: "t", Scope: "s1", Due: t0.Add(10 * time.Second), Family: "clock.tick", Payload: payload(1), Recurrence: rule(10, 2)})
	r.clock.advance(9 * time.Second)
	r.settle()
	if evs := r.events(); len(evs) != 0 {
		t.Fatalf("fired before its due time: %+v", evs)
	}
	r.clock.advance(time.Second)
	r.waitFor("the first firing", func() bool { return len(r.events()) == 1 })
	ev := r.events()[0]
	want := pebblekv.Event{Scope: "s1", Source: "clock/timer", Type: "clock.tick", DeliveryID: "clock/t@2026-05-01T12:00:10Z"}
	if ev.Scope != want.Scope || ev.Source != want.Source || ev.Type != want.Type || ev.DeliveryID != want.DeliveryID ||
		!ev.Time.Equal(t0.Add(10*time.Second)) || string(ev.Payload.Data) != `{"n":1}` {
		t.Fatalf("fired %+v, want %+v at the due time with n 1", ev, want)
	}
	r.waitFor("the rearm", func() bool { tm, _ := r.timer("t"); return tm.Fired == 1 })
	tm, _ := r.timer("t")
	if !tm.Due.Equal(t0.Add(20*time.Second)) || string(tm.Payload.Data) != `{"n":2}` {
		t.Fatalf("rearmed as %+v, want due 12:00:20 with n 2", tm)
	}
	r.clock.advance(10 * time.Second)
	r.waitFor("the second firing and the rule's end", func() bool {
		_, armed := r.timer("t")
		return len(r.events()) == 2 && !armed
	})
	if got := string(r.events()[1].Payload.Data); got != `{"n":2}` {
		t.Fatalf("the second firing carries %s, want n 2", got)
	}
	if r.pkgs.inTx.Load() < 2 {
		t.Fatalf("recurrence.next was called %d times as an in-transaction call, want 2", r.pkgs.inTx.Load())
	}
}

// TestSchedulerFiresAOneShotTimerOnceAndACancelledOneNever: a timer with no
// recurrence fires once and is gone; a timer removed before its due time
// fires nothing.
func TestSchedulerFiresAOneShotTimerOnceAndACancelledOneNever(t *testing.T) {
	r := newSchedRig(t)
	r.arm(pebblekv.Timer{ID: "once", Scope: "s1", Due: t0.Add(time.Second), Family: "clock.tick", Payload: payload(1)})
	r.arm(pebblekv.Timer{ID: "gone", Scope: "s1", Due: t0.Add(2 * time.Second), Family: "clock.tick", Payload: payload(1)})
	r.settle()
	if err := r.db.Update(func(tx *pebblekv.Tx) error {
		_, err := tx.DeleteTimer(pebblekv.TimerID("clock", "gone"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r.e.TimersChanged()
	r.clock.advance(time.Minute)
	r.waitFor("the one-shot firing", func() bool { _, armed := r.timer("once"); return !armed })
	r.settle()
	evs := r.events()
	if len(evs) != 1 || evs[0].DeliveryID != "clock/once@2026-05-01T12:00:01Z" {
		t.Fatalf("fired %+v, want the one-shot timer once", evs)
	}
}

// TestSchedulerAcceptsAFiringOnceAcrossACrashMidTransaction: the package
// fails inside the firing's transaction (after the Event was accepted in
// it), so nothing commits and the timer is retried after a backoff; the
// daemon is then stopped with the store closed and started again; the
// firing commits once, with the same delivery ID, and arming the timer
// again for the occurrence that fired accepts nothing new.
func TestSchedulerAcceptsAFiringOnceAcrossACrashMidTransaction(t *testing.T) {
	r := newSchedRig(t)
	r.failures.Store(2)
	r.arm(pebblekv.Timer{ID: "t", Scope: "s1", Due: t0.Add(time.Second), Family: "clock.tick", Payload: payload(1), Recurrence: rule(60, 0)})
	r.clock.advance(time.Second)
	r.waitFor("the first failed firing", func() bool { return r.failures.Load() <= 1 })
	r.settle()
	if evs := r.events(); len(evs) != 0 {
		t.Fatalf("a firing whose transaction failed accepted %+v", evs)
	}
	if tm, _ := r.timer("t"); tm.Fired != 0 || !tm.Due.Equal(t0.Add(time.Second)) {
		t.Fatalf("a failed firing changed the timer: %+v", tm)
	}
	r.clock.advance(timerRetryFirst)
	r.waitFor("the retried firing to fail", func() bool { return r.failures.Load() <= 0 })
	// A restarted scheduler has no backoff to wait out: it fires at once.
	r.restart()
	r.waitFor("the firing after restart", func() bool { return len(r.events()) == 1 })
	r.waitFor("the rearm", func() bool { tm, _ := r.timer("t"); return tm.Fired == 1 })
	// The occurrence that fired, armed again: its Event is already there.
	r.arm(pebblekv.Timer{ID: "t", Scope: "s1", Due: t0.Add(time.Second), Family: "clock.tick", Payload: payload(1)})
	r.waitFor("the re-armed occurrence", func() bool { _, armed := r.timer("t"); return !armed })
	evs := r.events()
	if len(evs) != 1 || evs[0].DeliveryID != "clock/t@2026-05-01T12:00:01Z" {
		t.Fatalf("events %+v, want the one firing once", evs)
	}
}
