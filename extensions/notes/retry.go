package notes

import (
	"context"
	"errors"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// While the host has an in-transaction call to the package outstanding (a
// thread's trigger, a digest's next occurrence), it refuses the package's
// own calls to it with reentrant_call, for at most that call's bound. A
// handler running at the same moment (a webhook request, an operation)
// waits for the bound to pass and calls again, rather than failing.
const (
	retryFirst = 10 * time.Millisecond
	retryMax   = 2 * time.Second
)

// retrying runs fn, again while it fails with reentrant_call, for at most
// retryMax or until ctx ends. fn must be safe to run again.
func retrying(ctx context.Context, fn func() error) error {
	wait, end := retryFirst, time.Now().Add(retryMax)
	for {
		err := fn()
		if !errors.Is(err, protocol.ErrReentrantCall) || time.Now().Add(wait).After(end) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, protocol.InTransactionDeadlineMillis*time.Millisecond)
	}
}
