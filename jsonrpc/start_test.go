package jsonrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStartedCallsAreEachAnsweredInTheirOwnWait: two requests started one
// after the other are both in flight at once (the peer holds the first
// until the second arrives), and each Wait decodes its own answer.
func TestStartedCallsAreEachAnsweredInTheirOwnWait(t *testing.T) {
	second := make(chan struct{})
	table := NewTable()
	Handle(table, "echo", func(ctx context.Context, p echoParams) (echoParams, error) {
		switch p.Text {
		case "first":
			select {
			case <-second:
			case <-time.After(time.Minute):
				return p, errors.New("the second request never came while the first was held")
			}
		case "second":
			close(second)
		}
		return p, nil
	})
	a, _ := connPair(t, Options{}, Options{Handlers: table})
	ctx := context.Background()
	var first, next echoParams
	p1, err := a.Start(ctx, "echo", echoParams{Text: "first"}, &first)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := a.Start(ctx, "echo", echoParams{Text: "second"}, &next)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Wait(); err != nil || next.Text != "second" {
		t.Fatalf("second: %+v %v", next, err)
	}
	if err := p1.Wait(); err != nil || first.Text != "first" {
		t.Fatalf("first: %+v %v", first, err)
	}
}

// TestStartedCallWhoseContextEndsCancelsIt: Wait returns the context's
// error at once and the peer's handler sees its cancel.
func TestStartedCallWhoseContextEndsCancelsIt(t *testing.T) {
	seen := make(chan struct{})
	table := NewTable()
	Handle(table, "block", func(ctx context.Context, _ echoParams) (echoParams, error) {
		<-ctx.Done()
		close(seen)
		return echoParams{}, ctx.Err()
	})
	a, _ := connPair(t, Options{}, Options{Handlers: table})
	ctx, cancel := context.WithCancel(context.Background())
	p, err := a.Start(ctx, "block", echoParams{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	select {
	case <-seen:
	case <-time.After(time.Minute):
		t.Fatal("the peer's handler never saw the cancel")
	}
}
