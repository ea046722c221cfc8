package tui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

var bins daemontest.Bins

func TestMain(m *testing.M) { os.Exit(daemontest.Main(m, &bins)) }

// TestDashboardFollowsARealDaemon runs the dashboard over the real
// client against the real binary: it shows the packages, tails an Event as
// it is accepted, says disconnected when the daemon is killed, and is live
// again by itself when a new daemon answers on the same state.
func TestDashboardFollowsARealDaemon(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(daemontest.HelloOnly)
	e.Start()
	h := startWith(t, e.C, Options{Retry: 50 * time.Millisecond}, 80, 24)
	s := h.waitFor("hello running", func(s string) bool {
		return strings.Contains(s, "hello") && strings.Contains(s, "running")
	})
	if strings.Contains(s, "disconnected") {
		t.Fatalf("a live dashboard says disconnected:\n%s", s)
	}

	for range 3 {
		h.key("tab")
	}
	h.waitShows("[Events]")
	ev, err := e.C.Emit(context.Background(), client.EmitRequest{Scope: "beta", Type: "tui.test"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the emitted Event", func(s string) bool {
		return strings.Contains(s, "tui.test") && strings.Contains(s, "operator")
	})
	if ev.Sequence == 0 {
		t.Fatalf("the emitted Event has no sequence: %+v", ev)
	}
	// Where the router sent it, as the daemon says.
	d, err := e.C.EventRoute(context.Background(), ev.ID, 30*time.Second)
	if err != nil || d.State == client.RoutePending {
		t.Fatalf("the route of %s: %+v %v", ev.ID, d, err)
	}
	want := "no route matched"
	if d.Work != "" {
		want = d.Work
	}
	h.waitFor("the Event's route, "+want, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "tui.test") && strings.Contains(l, want[:min(len(want), 20)]) {
				return true
			}
		}
		return false
	})

	e.Kill()
	h.waitShows("disconnected, retrying")
	e.Start()
	h.waitFor("live again", func(s string) bool {
		return strings.Contains(s, "live") && !strings.Contains(s, "disconnected")
	})
	// The tail kept what it showed, without the Event twice.
	if s := h.screen(); strings.Count(s, "tui.test") != 1 {
		t.Fatalf("after the restart the tail shows tui.test %d times:\n%s", strings.Count(s, "tui.test"), s)
	}
}
