package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// TestLogsWireAndRestartOfARealPackage runs the dashboard over the real
// client against the real binary: l on the probe package shows its stderr
// log as the daemon has it; w shows its wire tap, with the handshake and,
// as it passes, an operator's call and its JSON; r then y restarts it, the
// status line says it runs again, and the tap shows the new handshake.
func TestLogsWireAndRestartOfARealPackage(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	ctx := context.Background()
	h := startWith(t, e.C, Options{Retry: 50 * time.Millisecond, Wait: 2 * time.Second}, 240, 48)
	h.waitFor("the probe running", func(s string) bool {
		return strings.Contains(s, probe.Name) && strings.Contains(s, "running")
	})
	for _, k := range append(append([]string{"/"}, strings.Split(probe.Name, "")...), "enter") {
		h.key(k)
	}
	h.waitShows("filter: " + probe.Name)

	log, err := e.C.Logs(ctx, probe.Name, 20)
	if err != nil || len(log.Lines) == 0 {
		t.Fatalf("the probe's log: %+v %v", log, err)
	}
	h.key("l")
	s := h.waitShows(strings.TrimSpace(log.Lines[len(log.Lines)-1]))
	if !strings.Contains(s, "[Logs]") || !strings.Contains(s, log.Path) {
		t.Fatalf("l did not show the probe's log at %s:\n%s", log.Path, s)
	}

	h.key("tab")
	h.key("tab")
	h.waitShows("[Extensions]")
	h.key("w")
	s = h.waitShows("initialize")
	if !strings.Contains(s, "wire tap of "+probe.Name) {
		t.Fatalf("w did not show the probe's wire tap:\n%s", s)
	}
	res, err := e.C.Call(ctx, probe.Name, client.CallRequest{Operation: "probe.call", Scope: "alpha",
		Input: map[string]any{"method": "secret.resolve", "params": map[string]any{"scope_id": "alpha", "names": []string{"s1"}}}})
	if err != nil || res.Code != "" {
		t.Fatalf("the operator's call: %+v %v", res, err)
	}
	// Wait until the last row is the call's answer, so the row above it is
	// the host's answer to the probe's secret.resolve.
	h.waitFor("the call's answer as the last row", func(s string) bool {
		last := ""
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "→ext") || strings.Contains(l, "←ext") {
				last = l
			}
		}
		return strings.Contains(s, "secret.resolve") && strings.Contains(last, "←ext answer") && strings.Contains(last, "operation.call")
	})
	// The last row is the call's answer; above it, the host's answer to the
	// probe's secret.resolve, whose secret the tap hid, unless lines of the
	// probe's own task came in between: step up until that answer is open.
	for up := 1; ; up++ {
		h.key("k")
		h.key("enter")
		s = h.waitShows(`"jsonrpc": "2.0"`)
		if strings.Contains(s, "answer secret.resolve") {
			break
		}
		if up == 20 {
			t.Fatalf("no answer to secret.resolve within 20 rows above the call's answer:\n%s", s)
		}
		h.key("esc")
		h.waitFor("the wire list again", func(s string) bool { return !strings.Contains(s, `"jsonrpc": "2.0"`) })
	}
	if !strings.Contains(s, "redacted: a secret's value was replaced") || strings.Contains(s, "one-7f3a") {
		t.Fatalf("the expanded secret.resolve answer is not redacted:\n%s", s)
	}
	h.key("esc")
	before := strings.Count(h.waitShows("operation.call"), "initialize")

	h.key("tab")
	h.waitShows("[Extensions]")
	h.key("r")
	h.waitShows("restart package " + probe.Name + "?")
	h.key("y")
	h.waitShows(probe.Name + " restarted: running, pid")
	h.key("shift+tab")
	h.waitFor("the new handshake on the wire", func(s string) bool {
		return strings.Contains(s, "[Wire]") && strings.Count(s, "initialize") > before
	})
	// The daemon notes each start in the log: the tail shows the new one.
	pid := e.Extension(probe.Name).PID
	h.key("shift+tab")
	h.waitShows(fmt.Sprintf("started %s (pid %d)", filepath.Join(e.ProbeDir(), "probe-extension"), pid))
}
