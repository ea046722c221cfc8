package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/schedule"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// TestServeWithNoConfigRunsTheDemoToCompletedWork: serve with no config
// file runs the embedded demo end to end on the real binary: the schedule
// job (every 30 s) fires, its route makes timed Work, the demo binding's
// shell executor runs its script (which reads its context through the
// toolbelt), and `work list --json` shows the Work completed, its stdout
// naming the Work. An operator's Event goes the same way. The demo's
// first Work only comes after the job's first 30 s, so this waits up to
// 100 s for it.
func TestServeWithNoConfigRunsTheDemoToCompletedWork(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Launch("", []string{"XDG_CONFIG_HOME=" + t.TempDir()})
	e.Eventually("the daemon running the embedded default", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.Phase == client.PhaseRunning && st.Config == "embedded default"
	})

	// An operator's Event: the manual route makes Work of it at once.
	code, out, errs := cli(t, e, "events", "emit", "--scope", "demo", "--data", `{"title":"try it"}`)
	if code != 0 {
		t.Fatalf("events emit: %d %s %s", code, out, errs)
	}
	manual := waitCompleted(t, e, func(w client.Work) bool { return w.Kind == "manual" }, daemontest.Deadline)
	if got := cliOutput(t, e, manual.ID); got != "ran "+manual.ID+"\n" {
		t.Fatalf("the manual Work's script printed %q", got)
	}

	// The schedule's job, within its first 30 s and the time to run it.
	run := waitCompleted(t, e, func(w client.Work) bool { return w.Kind == schedule.Run }, 100*time.Second)
	if run.Display == nil || run.Display.Title != "demo-tick" {
		t.Fatalf("the schedule's Work: %+v, want it titled by the demo's job", run)
	}
	if got := cliOutput(t, e, run.ID); got != "ran "+run.ID+"\n" {
		t.Fatalf("the schedule Work's script printed %q", got)
	}
}

// waitCompleted polls `work list --json` until a Work that want accepts is
// completed, failing the test if one fails or none completes within d.
func waitCompleted(t *testing.T, e *daemontest.Env, want func(client.Work) bool, d time.Duration) client.Work {
	t.Helper()
	end := time.Now().Add(d)
	for {
		var list client.WorkList
		cliJSON(t, e, &list, "work", "list", "--scope", "demo")
		for _, w := range list.Work {
			if !want(w) {
				continue
			}
			switch w.State {
			case "completed":
				return w
			case "failed", "cancelled":
				_, show, _ := cli(t, e, "work", "show", w.ID)
				t.Fatalf("the demo's Work %s is %s:\n%s\n%s", w.ID, w.State, show, e.Log)
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no such Work completed within %s: %+v\n%s", d, list.Work, e.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cliOutput is what the Work's attempt printed, fetched as an operator
// would (`work artifacts ID --get stdout`).
func cliOutput(t *testing.T, e *daemontest.Env, work string) string {
	t.Helper()
	code, out, errs := cli(t, e, "work", "artifacts", work, "--get", "stdout")
	if code != 0 {
		t.Fatalf("work artifacts %s --get stdout: %d %s", work, code, strings.TrimSpace(errs))
	}
	return out
}
