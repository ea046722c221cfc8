package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// callerReadsPair is a Conn with CallerReads (a) against a plain one (b)
// serving tbl, over real pipes.
func callerReadsPair(t *testing.T, aOpts Options, tbl *Table) (a, b *Conn) {
	t.Helper()
	aOpts.CallerReads = true
	return connPair(t, aOpts, Options{Handlers: tbl})
}

// within runs call and returns its error, failing the test if it has not
// returned after d.
func within(t *testing.T, d time.Duration, call func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		t.Fatalf("the call had not returned after %s", d)
		return nil
	}
}

// takeFreeRole echoes until a call has read its own answer: that call left
// the role free as it returned, and with keepIdle long the next call finds
// it so.
func takeFreeRole(t *testing.T, c *Conn) {
	t.Helper()
	for i := 0; c.roleGen.Load() == 0; i++ {
		if i == 100 {
			t.Fatal("no call read its own answer in 100")
		}
		echoOnce(t, c, "free the role")
	}
}

func echoOnce(t *testing.T, c *Conn, text string) {
	t.Helper()
	var out echoParams
	if err := c.Call(context.Background(), "echo", echoParams{Text: text}, &out); err != nil || out.Text != text {
		t.Fatalf("echo %q: %q, %v", text, out.Text, err)
	}
}

func TestCallerReadsItsOwnAnswerWhenNoOtherCallWaits(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("CallerReads=", on), func(t *testing.T) {
			a, _ := connPair(t, Options{CallerReads: on, keepIdle: time.Hour}, Options{Handlers: echoTable()})
			for i := range 50 {
				echoOnce(t, a, fmt.Sprint("hello ", i))
			}
			// The first call finds the reading goroutine reading; after it,
			// the role is left free and each call takes it. Off, none does.
			got := a.roleGen.Load()
			if on && got < 40 {
				t.Errorf("%d of 50 calls read their own answers", got)
			}
			if !on && got != 0 {
				t.Errorf("%d calls read their own answers with CallerReads off", got)
			}
		})
	}
}

func TestCallerReadsStillReadsLinesNobodyAskedFor(t *testing.T) {
	pinged := make(chan string, 2)
	aTbl := NewTable()
	Handle(aTbl, "ping", func(ctx context.Context, p echoParams) (echoParams, error) {
		pinged <- p.Text
		return p, nil
	})
	a, b := connPair(t, Options{CallerReads: true, Handlers: aTbl}, Options{Handlers: echoTable()})
	echoOnce(t, a, "first")
	echoOnce(t, a, "second")
	// No call of a's is in flight now and the role is free: the keeper
	// must take it back and serve what b sends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out echoParams
	if err := b.Call(ctx, "ping", echoParams{Text: "call"}, &out); err != nil || out.Text != "call" {
		t.Fatalf("b's call while a was idle: %q, %v", out.Text, err)
	}
	if err := b.Notify(ctx, "ping", echoParams{Text: "note"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"call", "note"} {
		select {
		case got := <-pinged:
			if got != want {
				t.Fatalf("served %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("%q was never served", want)
		}
	}
	echoOnce(t, a, "after")
}

func TestCallbacksDuringACallReadingItsOwnAnswerAreServed(t *testing.T) {
	aTbl := NewTable()
	Handle(aTbl, "ping", func(ctx context.Context, p echoParams) (echoParams, error) {
		return echoParams{Text: "pong " + p.Text}, nil
	})
	bTbl := NewTable()
	Handle(bTbl, "work", func(ctx context.Context, p echoParams) (echoParams, error) {
		var back echoParams
		if err := FromContext(ctx).Call(ctx, "ping", p, &back); err != nil {
			return echoParams{}, err
		}
		return back, nil
	})
	a, _ := connPair(t, Options{CallerReads: true, Handlers: aTbl}, Options{Handlers: bTbl})
	for i := range 20 {
		var out echoParams
		if err := a.Call(context.Background(), "work", echoParams{Text: fmt.Sprint(i)}, &out); err != nil || out.Text != fmt.Sprint("pong ", i) {
			t.Fatalf("call %d: %q, %v", i, out.Text, err)
		}
	}
	if a.roleGen.Load() == 0 {
		t.Error("no call read its own answer, so none met a callback")
	}
}

func TestCallerReadingIsInterrupted(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		ctx  func(entered chan struct{}) context.Context
		want error
	}{
		{"by its context", Options{}, func(entered chan struct{}) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-entered; cancel() }()
			return ctx
		}, context.Canceled},
		{"by CallTimeout", Options{CallTimeout: 100 * time.Millisecond}, func(chan struct{}) context.Context {
			return context.Background()
		}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entered, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
			tc.opts.keepIdle = time.Hour
			a, _ := callerReadsPair(t, tc.opts, waitTable(entered, cancelled))
			takeFreeRole(t, a)
			ctx := tc.ctx(entered)
			before := a.roleGen.Load()
			if err := within(t, 10*time.Second, func() error { return a.Call(ctx, "wait", nil, nil) }); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if a.roleGen.Load() == before {
				t.Fatal("the call did not read its own answer, so nothing was interrupted")
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the peer's handler was never cancelled")
			}
			echoOnce(t, a, "still working")
		})
	}
}

func TestCallerReadingSeesThePeerGo(t *testing.T) {
	entered, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	a, b := callerReadsPair(t, Options{keepIdle: time.Hour}, waitTable(entered, cancelled))
	takeFreeRole(t, a)
	go func() { <-entered; b.Close() }()
	err := within(t, 10*time.Second, func() error { return a.Call(context.Background(), "wait", nil, nil) })
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the connection's end", err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a never ended")
	}
}

func TestCallerReadsWithCallersAtOnce(t *testing.T) {
	a, _ := callerReadsPair(t, Options{}, echoTable())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				want := fmt.Sprint(g, "/", i)
				var out echoParams
				if err := a.Call(context.Background(), "echo", echoParams{Text: want}, &out); err != nil || out.Text != want {
					errs <- fmt.Errorf("%s: %q, %v", want, out.Text, err)
					return
				}
				if i%50 == 0 {
					// Gaps, so the role is left free and taken again
					// while others are in flight.
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCallerReadsLeavesNoGoroutineAfterClose(t *testing.T) {
	base := runtime.NumGoroutine()
	a, b := connPair(t, Options{CallerReads: true}, Options{Handlers: echoTable()})
	for i := range 10 {
		echoOnce(t, a, fmt.Sprint(i))
	}
	a.Close()
	b.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCallerReadsLeavesNoStartedCallUnread(t *testing.T) {
	a, _ := callerReadsPair(t, Options{keepIdle: time.Hour}, echoTable())
	takeFreeRole(t, a)
	// A call started while the role is free does not read its own answer
	// (its caller may be busy elsewhere): the role goes to the keeper,
	// which must read it, and a call made meanwhile too.
	var first, second echoParams
	p, err := a.Start(context.Background(), "echo", echoParams{Text: "started"}, &first)
	if err != nil {
		t.Fatal(err)
	}
	if err := within(t, 10*time.Second, func() error {
		return a.Call(context.Background(), "echo", echoParams{Text: "called"}, &second)
	}); err != nil || second.Text != "called" {
		t.Fatalf("the call made meanwhile: %q, %v", second.Text, err)
	}
	if err := within(t, 10*time.Second, p.Wait); err != nil || first.Text != "started" {
		t.Fatalf("the started call: %q, %v", first.Text, err)
	}
}
