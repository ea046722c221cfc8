package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The scheduler's pacing.
const (
	// timerIdle is the longest the scheduler sleeps without looking at the
	// store: a backstop should a wake ever be missed.
	timerIdle = time.Minute
	// timerRetryFirst and timerRetryMax bound the backoff of a timer whose
	// firing failed (its recurrence.next erred, its package is down).
	timerRetryFirst = time.Second
	timerRetryMax   = 5 * time.Minute
	// timerBatch is how many due timers one pass reads.
	timerBatch = pebblekv.MaxTimers
)

// timers fires due timers on the engine's clock. Each firing is one store
// transaction: the Event is accepted, and the timer is rearmed at its
// recurrence's next occurrence or removed. A crash before the commit leaves
// the timer as it was, so it fires again with the same delivery ID and its
// Event is accepted once.
type timers struct {
	e    *Engine
	wake chan struct{}

	mu      sync.Mutex
	backoff map[string]timerRetry // by timer ID
}

// timerRetry is when a failed firing of a timer at due is tried again.
type timerRetry struct {
	due   time.Time
	at    time.Time
	delay time.Duration
}

func newTimers(e *Engine) *timers {
	return &timers{e: e, wake: make(chan struct{}, 1), backoff: map[string]timerRetry{}}
}

// TimersChanged says a timer was armed or cancelled (or a job added): the
// scheduler looks again now rather than sleeping to a due time that may
// have moved. It never blocks.
func (e *Engine) TimersChanged() {
	select {
	case e.timers.wake <- struct{}{}:
	default:
	}
}

// run fires due timers and starts due jobs (Every) until ctx ends,
// sleeping until the next due time, a retry, a change, or the idle
// backstop, whichever comes first.
func (t *timers) run(ctx context.Context) {
	for {
		next := t.pass(ctx)
		if due, ok := t.e.jobs.dispatch(ctx, t.e.d.Clock.Now()); ok && due.Before(next) {
			next = due
		}
		wait := max(next.Sub(t.e.d.Clock.Now()), 0)
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		case <-t.e.d.Clock.After(wait):
		}
	}
}

// pass fires every due timer that is not waiting out a retry, and answers
// when to look again.
func (t *timers) pass(ctx context.Context) time.Time {
	now := t.e.d.Clock.Now()
	var due []pebblekv.Timer
	next, armed := now.Add(timerIdle), false
	err := t.e.d.DB.View(func(r *pebblekv.Reader) error {
		var err error
		if due, err = r.DueTimers(now, timerBatch); err != nil {
			return err
		}
		var d time.Time
		d, armed, err = r.NextDue()
		if armed && d.After(now) && d.Before(next) {
			next = d
		}
		return err
	})
	if err != nil {
		t.e.d.Logger.Warn("reading due timers", "err", err)
		return now.Add(timerRetryFirst)
	}
	fired := 0
	for _, tm := range due {
		if ctx.Err() != nil {
			return now
		}
		if t.waiting(tm, now) {
			continue
		}
		if err := t.fire(ctx, tm, now); err != nil {
			t.failed(tm, now, err)
			continue
		}
		t.succeeded(tm.ID)
		fired++
	}
	if fired > 0 {
		// Look again at once: a rearmed timer's next due time was not
		// known when this pass read the store.
		t.e.Notify()
		return now
	}
	return t.earliestRetry(due, next)
}

// waiting reports whether tm's firing at its due time is waiting out a
// retry.
func (t *timers) waiting(tm pebblekv.Timer, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.backoff[tm.ID]
	return ok && r.due.Equal(tm.Due) && now.Before(r.at)
}

// failed backs tm off, doubling its delay up to timerRetryMax.
func (t *timers) failed(tm pebblekv.Timer, now time.Time, err error) {
	t.mu.Lock()
	r, ok := t.backoff[tm.ID]
	if !ok || !r.due.Equal(tm.Due) {
		r = timerRetry{due: tm.Due}
	}
	r.delay = min(max(2*r.delay, timerRetryFirst), timerRetryMax)
	r.at = now.Add(r.delay)
	t.backoff[tm.ID] = r
	t.mu.Unlock()
	t.e.d.Logger.Warn("timer did not fire; retrying", "timer", tm.ID, "owner", tm.Owner, "retry_in", r.delay, "err", err)
}

func (t *timers) succeeded(id string) {
	t.mu.Lock()
	delete(t.backoff, id)
	t.mu.Unlock()
}

// earliestRetry is the earlier of next and the first retry due after now;
// it forgets the retries of timers no longer due (cancelled or rearmed).
func (t *timers) earliestRetry(due []pebblekv.Timer, next time.Time) time.Time {
	still := make(map[string]bool, len(due))
	for _, tm := range due {
		still[tm.ID] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, r := range t.backoff {
		if !still[id] {
			delete(t.backoff, id)
			continue
		}
		if r.at.Before(next) {
			next = r.at
		}
	}
	return next
}

// errTimerMoved: the timer changed between the pass's read and its firing;
// the next pass sees it as it is now.
var errTimerMoved = errors.New("the timer was rearmed or cancelled meanwhile")

// fire fires one timer in one transaction: accept its Event (source
// "<owner>/timer", delivery ID TimerDeliveryID, the Event's time the due
// time), then rearm it at its recurrence's next occurrence or remove it.
// Any error aborts the whole transaction: nothing is accepted.
func (t *timers) fire(ctx context.Context, tm pebblekv.Timer, now time.Time) error {
	err := t.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		cur, found, err := tx.Timer(tm.ID)
		if err != nil {
			return err
		}
		if !found || !cur.Due.Equal(tm.Due) {
			return errTimerMoved
		}
		_, _, err = tx.Accept(pebblekv.EventInput{
			Scope: cur.Scope, Source: protocol.TimerSource(cur.Owner), Type: cur.Family,
			DeliveryID: TimerDeliveryID(cur), Payload: cur.Payload, Time: cur.Due,
		}, t.e.d.Limits)
		if err != nil {
			return fmt.Errorf("accepting its Event: %w", err)
		}
		if cur.Recurrence == nil {
			_, err := tx.DeleteTimer(cur.ID)
			return err
		}
		res, err := t.next(ctx, cur, now)
		if err != nil {
			return err
		}
		if res.Done {
			_, err := tx.DeleteTimer(cur.ID)
			return err
		}
		cur.Due, cur.Fired = res.Next.UTC(), cur.Fired+1
		if res.Payload != nil {
			cur.Payload = *res.Payload
		}
		return tx.PutTimer(cur)
	})
	if errors.Is(err, errTimerMoved) {
		return nil
	}
	return err
}

// next asks the timer's owner for its recurrence's next occurrence after
// the later of the due time and now (so a timer that fell behind, the
// daemon having been down, fires once and resumes its cadence), inside
// the firing's transaction and bounded as in-transaction calls are.
func (t *timers) next(ctx context.Context, tm pebblekv.Timer, now time.Time) (protocol.RecurrenceNextResult, error) {
	after := tm.Due
	if now.After(after) {
		after = now
	}
	p := protocol.RecurrenceNextParams{
		Timer: ownID(tm), Payload: tm.Payload, Kind: tm.Recurrence.Kind, Rule: tm.Recurrence.Rule, After: after,
	}
	var res protocol.RecurrenceNextResult
	if err := t.callInTx(ctx, tm.Owner, p, &res); err != nil {
		return res, fmt.Errorf("%s of %s: %w", protocol.MethodRecurrenceNext, tm.Owner, err)
	}
	if !res.Done && !res.Next.After(after) {
		return res, protocol.Errorf(protocol.ErrInvalid, "%s of %s answered %s, not after %s: a recurrence's next occurrence must be later",
			protocol.MethodRecurrenceNext, tm.Owner, res.Next.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
	if res.Payload != nil {
		if err := t.checkPayload(tm.Owner, *res.Payload); err != nil {
			return res, err
		}
	}
	return res, nil
}

// inTxCaller is the Packages that can make an in-transaction call (the
// daemon's, through the session's CallInTx).
type inTxCaller interface {
	CallInTx(ctx context.Context, pkg, method string, params, result any) error
}

// callInTx calls recurrence.next on pkg with the in-transaction bound.
func (t *timers) callInTx(ctx context.Context, pkg string, p protocol.RecurrenceNextParams, res *protocol.RecurrenceNextResult) error {
	return t.e.callInTx(ctx, pkg, protocol.MethodRecurrenceNext, p, res)
}

// callInTx makes one of the in-transaction calls (recurrence.next,
// work_kind.trigger) on pkg: through the session's in-transaction rules
// when Packages has them (a plain call is refused for these methods), else
// a call bounded by the in-transaction deadline.
func (e *Engine) callInTx(ctx context.Context, pkg, method string, params, res any) error {
	if c, ok := e.d.Packages.(inTxCaller); ok {
		return c.CallInTx(ctx, pkg, method, params, res)
	}
	ctx, cancel := context.WithTimeout(ctx, protocol.InTransactionDeadlineMillis*time.Millisecond)
	defer cancel()
	return e.d.Packages.Call(ctx, pkg, method, params, res)
}

// checkPayload applies the rules of a payload the owner writes to the one
// its recurrence gives the next firing.
func (t *timers) checkPayload(owner string, p protocol.Payload) error {
	if size := protocol.PayloadSize(p); size > protocol.MaxPayloadBytes {
		return protocol.Errorf(protocol.ErrTooLarge, "%s of %s: a payload of %d bytes is over the %d-byte bound",
			protocol.MethodRecurrenceNext, owner, size, protocol.MaxPayloadBytes)
	}
	m, ok := t.e.d.Packages.Manifest(owner)
	if !ok {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", owner)
	}
	return m.CheckWrite(p.Schema)
}

// TimerDeliveryID is the delivery ID of a timer's firing at its current
// due time: "<timer id>@<due, RFC 3339 in UTC>". A firing retried after a
// crash has the same one, so its Event is accepted once; so does a timer
// armed again for an occurrence that already fired.
func TimerDeliveryID(t pebblekv.Timer) string {
	return t.ID + "@" + t.Due.UTC().Format(time.RFC3339Nano)
}

// ownID is the id the owner armed the timer as.
func ownID(t pebblekv.Timer) string { return t.ID[len(t.Owner)+1:] }
