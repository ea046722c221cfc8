package tui

import (
	"bytes"
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/open-conduit/open-conduit/client"
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
