package tui

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// TestProgramShowsPanesAndQuits runs the dashboard as a bubbletea program
// on a fake terminal of 80×24: the first frame shows the packages, tab
// brings the Work, q ends the program with the Work pane shown.
func TestProgramShowsPanesAndQuits(t *testing.T) {
	f := newFake()
	f.feed <- client.Changes{Tick: 1, Changed: true}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(ctx, f, Options{Now: func() time.Time { return epoch }})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	waitOutput := func(text string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
			teatest.WithDuration(60*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	waitOutput("handshake_failed")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	waitOutput("deploy the website")
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(60*time.Second)).(*Model)
	if !ok {
		t.Fatal("the final model is not the dashboard")
	}
	if got := final.pages[final.active].Title(); got != "Work" {
		t.Fatalf("the program ended on %s, want Work", got)
	}
}

// TestProgramOnARealDaemonTailsAndRestartsAPackage runs the dashboard as a
// bubbletea program on a fake terminal of 80×24 over the real client and a
// real daemon: the package shows running, an Event emitted shows in the
// Events tail, a restart asked from the
// Extensions pane and confirmed gives the package a new pid, and q ends it.
func TestProgramOnARealDaemonTailsAndRestartsAPackage(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(daemontest.HelloOnly)
	e.Start()
	before := e.Extension("hello").PID
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(ctx, e.C, Options{Retry: 50 * time.Millisecond})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	// Output is a stream of frames; each wait reads on from the last.
	waitOutput := func(what string, ok func([]byte) bool) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), ok, teatest.WithDuration(60*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	has := func(text string) func([]byte) bool {
		return func(b []byte) bool { return bytes.Contains(b, []byte(text)) }
	}
	key := func(r rune) { tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)}) }
	waitOutput("hello running", has("running"))

	key('r')
	waitOutput("the restart question", has("restart package hello?"))
	key('y')
	e.Eventually("hello restarted with a new pid", func() bool {
		x := e.Extension("hello")
		return x.State == "running" && x.PID != before && x.PID > 0
	})
	waitOutput("the restart's answer", has(fmt.Sprintf("pid %d", e.Extension("hello").PID)))

	for range 3 {
		tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	}
	waitOutput("the Events pane", has("[Events]"))
	if _, err := e.C.Emit(context.Background(), client.EmitRequest{Scope: "beta", Type: "program.test"}); err != nil {
		t.Fatal(err)
	}
	waitOutput("the emitted Event", has("program.test"))
	key('q')
	if _, ok := tm.FinalModel(t, teatest.WithFinalTimeout(60*time.Second)).(*Model); !ok {
		t.Fatal("the final model is not the dashboard")
	}
}
