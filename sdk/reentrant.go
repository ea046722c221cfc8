package sdk

import (
	"context"
	"errors"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// While the host has an in-transaction call to the extension outstanding
// (recurrence.next, work_kind.trigger …), it refuses every call the
// extension makes to it with reentrant_call, for at most that call's bound
// (250 ms), because it cannot tell which of the extension's handlers a call
// comes from. A refused call ran nothing on the host, so a handler that is
// not itself the in-transaction one may simply call again once the bound
// has passed: Host does that for it. The in-transaction handler's own
// calls are never retried: they are the mistake the refusal reports.
const (
	reentrantFirst = 10 * time.Millisecond
	// reentrantFor bounds the retrying: several in-transaction calls in a
	// row (a burst of timers firing) are waited out, a stuck host is not.
	reentrantFor = 2 * time.Second
)

// inTxKey marks the context of a handler serving an in-transaction method.
type inTxKey struct{}

// inTransaction says ctx is an in-transaction handler's.
func inTransaction(ctx context.Context) bool { return ctx.Value(inTxKey{}) != nil }

// call sends one host method, again while the host refuses it
// reentrant_call and the caller is not an in-transaction handler, for at
// most reentrantFor or until ctx ends.
func (h *Host) call(ctx context.Context, method string, params, result any) error {
	c := h.conn()
	err := c.Call(ctx, method, params, result)
	if !errors.Is(err, protocol.ErrReentrantCall) || inTransaction(ctx) {
		return err
	}
	wait, end := reentrantFirst, time.Now().Add(reentrantFor)
	for errors.Is(err, protocol.ErrReentrantCall) && time.Now().Add(wait).Before(end) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, protocol.InTransactionDeadlineMillis*time.Millisecond)
		err = c.Call(ctx, method, params, result)
	}
	return err
}

// invoke is call through a method's descriptor.
func invoke[P, R any](ctx context.Context, h *Host, d protocol.Desc[P, R], params P) (R, error) {
	var r R
	if err := h.call(ctx, d.Name, params, &r); err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}
