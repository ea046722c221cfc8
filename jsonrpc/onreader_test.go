package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// incTable serves "inc", which answers 1, and "hold", which tells held it
// started and answers once let is closed or its context ends.
func incTable(held chan<- struct{}, let <-chan struct{}) *Table {
	tbl := echoTable()
	Handle(tbl, "inc", func(ctx context.Context, _ struct{}) (int, error) { return 1, nil })
	Handle(tbl, "hold", func(ctx context.Context, _ struct{}) (struct{}, error) {
		held <- struct{}{}
		select {
		case <-let:
		case <-ctx.Done():
		}
		return struct{}{}, nil
	})
	return tbl
}

// echoWithin echoes text through c and fails the test unless the answer
// comes back, and right, within 30 seconds.
func echoWithin(t *testing.T, c *Conn, text string) {
	t.Helper()
	if err := within(t, 30*time.Second, func() error {
		var out echoParams
		if err := c.Call(context.Background(), "echo", echoParams{Text: text}, &out); err != nil {
			return err
		}
		if out.Text != text {
			return fmt.Errorf("answered %q", out.Text)
		}
		return nil
	}); err != nil {
		t.Fatalf("echo %q: %v", text, err)
	}
}

// callInc calls the peer's "inc" n times from a handler, one after another,
// and returns the sum.
func callInc(ctx context.Context, n int) (int, error) {
	sum := 0
	for range n {
		var one int
		if err := FromContext(ctx).Call(ctx, "inc", nil, &one); err != nil {
			return sum, err
		}
		sum += one
	}
	return sum, nil
}

func TestCallsFromTheReaderReadTheirOwnAnswers(t *testing.T) {
	bTbl := echoTable()
	Handle(bTbl, "chain", func(ctx context.Context, n int) (int, error) { return callInc(ctx, n) })
	// An hour's grace: a loaded machine holding the handler between two
	// calls for over the default millisecond would release it.
	a, b := connPair(t, Options{Handlers: incTable(nil, nil)}, Options{Handlers: bTbl, grace: time.Hour})
	for i := range 10 {
		var sum int
		if err := a.Call(context.Background(), "chain", 20, &sum); err != nil || sum != 20 {
			t.Fatalf("chain %d: %d, %v", i, sum, err)
		}
	}
	// Every callback was read by the handler that made it, on the reader:
	// nothing released the reader, so no reading goroutine was started (a
	// release hands the role to a new one when no spare is parked).
	if n := b.readersStarted.Load(); n != 0 {
		t.Errorf("200 callbacks from the reader started %d reading goroutines, want 0", n)
	}
}

func TestARequestMetWhileReadingOnTheReaderIsServedAtOnce(t *testing.T) {
	held, let := make(chan struct{}, 1), make(chan struct{})
	bTbl := echoTable()
	Handle(bTbl, "outer", func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, FromContext(ctx).Call(ctx, "hold", nil, nil)
	})
	a, b := connPair(t, Options{Handlers: incTable(held, let)}, Options{Handlers: bTbl, grace: time.Hour})
	outer := make(chan error, 1)
	go func() { outer <- a.Call(context.Background(), "outer", nil, nil) }()
	<-held
	// b's handler is reading for its answer, which a holds back: a's echo
	// must be served meanwhile, not after it.
	echoWithin(t, a, "meanwhile")
	close(let)
	if err := within(t, 30*time.Second, func() error { return <-outer }); err != nil {
		t.Fatal(err)
	}
	if n := b.readersStarted.Load(); n != 1 {
		t.Errorf("%d reading goroutines started, want 1: the request met released the call", n)
	}
}

func TestOneHandlersCallsAtOnceFromTheReader(t *testing.T) {
	const goroutines, each = 4, 10
	bTbl := echoTable()
	Handle(bTbl, "fan", func(ctx context.Context, _ struct{}) (int, error) {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			sum  int
			errs []error
		)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := callInc(ctx, each)
				mu.Lock()
				sum += n
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return sum, errors.Join(errs...)
	})
	a, _ := connPair(t, Options{Handlers: incTable(nil, nil)}, Options{Handlers: bTbl})
	for i := range 50 {
		var sum int
		if err := within(t, 30*time.Second, func() error { return a.Call(context.Background(), "fan", nil, &sum) }); err != nil || sum != goroutines*each {
			t.Fatalf("fan %d: %d, %v", i, sum, err)
		}
	}
}

func TestAHandlerBackFromReadingIsReleasedAfterItsGrace(t *testing.T) {
	held, let := make(chan struct{}, 1), make(chan struct{})
	blocked, unblock := make(chan struct{}), make(chan struct{})
	bTbl := echoTable()
	Handle(bTbl, "thenBlock", func(ctx context.Context, _ struct{}) (struct{}, error) {
		if err := FromContext(ctx).Call(ctx, "hold", nil, nil); err != nil {
			return struct{}{}, err
		}
		close(blocked)
		<-unblock
		return struct{}{}, nil
	})
	a, b := connPair(t, Options{Handlers: incTable(held, let)}, Options{Handlers: bTbl})
	done := make(chan error, 1)
	go func() { done <- a.Call(context.Background(), "thenBlock", nil, nil) }()
	<-held
	// While the handler reads, the grace timer runs down and goes unarmed
	// (no call is dispatched meanwhile): the handler's return to its work
	// must arm it again, or nothing would ever release it.
	deadline := time.Now().Add(30 * time.Second)
	for b.graceArmed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the grace timer stayed armed for 30s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	close(let)
	<-blocked
	echoWithin(t, a, "past the grace")
	close(unblock)
	if err := within(t, 30*time.Second, func() error { return <-done }); err != nil {
		t.Fatal(err)
	}
}

func TestACallFromTheReaderEndsWithItsContext(t *testing.T) {
	held := make(chan struct{}, 1)
	bTbl := echoTable()
	Handle(bTbl, "bounded", func(ctx context.Context, _ struct{}) (int, error) {
		// Deriving the context releases the reader (it asks for the
		// call's Done); the call must end at its deadline all the same.
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := FromContext(ctx).Call(short, "hold", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("the held call ended with %v, want its deadline", err)
		}
		// The reader is still sound: the next callback is answered.
		return callInc(ctx, 3)
	})
	a, _ := connPair(t, Options{Handlers: incTable(held, nil)}, Options{Handlers: bTbl})
	var sum int
	if err := within(t, 30*time.Second, func() error { return a.Call(context.Background(), "bounded", nil, &sum) }); err != nil || sum != 3 {
		t.Fatalf("bounded: %d, %v", sum, err)
	}
	select {
	case <-held:
	default:
		t.Fatal("the held call never reached the peer")
	}
}

func TestACancelledCallStopsItsHandlerReadingOnTheReader(t *testing.T) {
	held := make(chan struct{}, 1)
	got := make(chan error, 1)
	bTbl := echoTable()
	Handle(bTbl, "outer", func(ctx context.Context, _ struct{}) (struct{}, error) {
		err := FromContext(ctx).Call(ctx, "hold", nil, nil)
		got <- err
		return struct{}{}, err
	})
	a, _ := connPair(t, Options{Handlers: incTable(held, nil)}, Options{Handlers: bTbl})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Call(ctx, "outer", nil, nil) }()
	<-held
	cancel()
	if err := within(t, 30*time.Second, func() error { return <-done }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a's call: %v, want context.Canceled", err)
	}
	// a's $/cancel reached b's handler while it read for its own answer.
	if err := within(t, 30*time.Second, func() error { return <-got }); !errors.Is(err, context.Canceled) {
		t.Fatalf("b's handler's call: %v, want context.Canceled", err)
	}
	var out echoParams
	if err := a.Call(context.Background(), "echo", echoParams{Text: "after"}, &out); err != nil || out.Text != "after" {
		t.Fatalf("echo after: %q, %v", out.Text, err)
	}
}

func TestAHandlerWaitingOnItsContextReleasesTheReader(t *testing.T) {
	for _, callBack := range []bool{false, true} {
		t.Run(fmt.Sprint("after a callback=", callBack), func(t *testing.T) {
			waiting := make(chan struct{})
			bTbl := echoTable()
			Handle(bTbl, "wait", func(ctx context.Context, _ struct{}) (struct{}, error) {
				if callBack {
					// Made with a context that cannot end, as a handler
					// records something it must not lose to its cancel.
					if _, err := callInc(context.WithoutCancel(ctx), 1); err != nil {
						return struct{}{}, err
					}
				}
				done := ctx.Done()
				close(waiting)
				<-done
				return struct{}{}, ctx.Err()
			})
			// An hour's grace: only the handler's waiting can let the
			// echo below be read.
			a, _ := connPair(t, Options{Handlers: incTable(nil, nil)}, Options{Handlers: bTbl, grace: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- a.Call(ctx, "wait", nil, nil) }()
			<-waiting
			echoWithin(t, a, "while it waits")
			cancel()
			if err := within(t, 30*time.Second, func() error { return <-done }); !errors.Is(err, context.Canceled) {
				t.Fatalf("the waiting call: %v, want context.Canceled", err)
			}
		})
	}
}
