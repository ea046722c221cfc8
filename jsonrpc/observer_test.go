package jsonrpc

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// lines records what an Observer sees.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Observe(outgoing bool, frame []byte) {
	dir := "in "
	if outgoing {
		dir = "out "
	}
	l.mu.Lock()
	l.got = append(l.got, dir+string(frame))
	l.mu.Unlock()
}

func TestObserverSeesEveryLineBothWaysWithoutNewlines(t *testing.T) {
	obs := &lines{}
	a, _ := connPair(t, Options{Observer: obs}, Options{Handlers: echoTable()})
	var out echoParams
	if err := a.Call(context.Background(), "echo", echoParams{Text: "hi"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := a.Notify(context.Background(), "echo", echoParams{Text: "note"}); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// The notification is written after the answer was read; both lines
	// of the call come before it.
	if len(obs.got) != 3 {
		t.Fatalf("observed %q; want the request, its answer and the notification", obs.got)
	}
	for i, want := range []string{`out {"jsonrpc":"2.0","method":"echo","params":{"text":"hi"},"id":1`, `in {"jsonrpc":"2.0","id":`, `out {"jsonrpc":"2.0","method":"echo"`} {
		if !strings.HasPrefix(obs.got[i], want) || strings.HasSuffix(obs.got[i], "\n") {
			t.Errorf("line %d = %q; want it to begin %q, without its newline", i, obs.got[i], want)
		}
	}
	// Negative control: the notification is not taken for the call.
	if strings.Contains(obs.got[2], `"id"`) {
		t.Errorf("the notification line %q carries an id", obs.got[2])
	}
}
