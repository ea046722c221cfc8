package drills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
)

// reconcileConfig has scope acme, whose probe-hook entry's source is
// reconciled from a pages file; %[1]q is the crash directory, %[2]q the
// pages file.
const reconcileConfig = `{
  "scopes": [
    {"id": "acme",
     "entries": [{"name": "in", "type": "probe-hook", "config": {"crash_dir": %[1]q, "pages": %[2]q}}],
     "routes": [{"handler": "probe-hook"}]}
  ]
}`

// hookSource is acme's probe-hook entry's source.
const hookSource = probe.HookName + "/acme/in"

// writePages sets what the next scan of hookSource sees.
func writePages(t *testing.T, path string, p probe.HookPages) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// scanNow scans hookSource through the management API.
func (r *hookRig) scanNow() client.Scan {
	r.t.Helper()
	s, err := r.e.C.Reconcile(context.Background(), hookSource)
	if err != nil {
		r.t.Fatalf("scanning %s now: %v\n%s", hookSource, err, r.e.Log)
	}
	return s
}

// source is hookSource as GET /v1/sources shows it.
func (r *hookRig) source() client.Source {
	r.t.Helper()
	ss, err := r.e.C.Sources(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range ss.Sources {
		if s.Name == hookSource {
			return s
		}
	}
	r.t.Fatalf("%s is not among the sources: %+v", hookSource, ss.Sources)
	return client.Source{}
}

// wantKeys fails unless each observed key@1 is in acme's log n times.
func (r *hookRig) wantKeys(n int, keys ...string) {
	r.t.Helper()
	for _, k := range keys {
		if got := len(eventsOf(r.t, r.e, "acme", k+"@1")); got != n {
			r.t.Fatalf("observation %s@1 is in the log %d times, want %d", k, got, n)
		}
	}
}

// TestDrillPackageCrashInIngressReconcileAdvancesNoCheckpoint crashes the
// package inside ingress.reconcile on the second page of a scan: the scan
// ends incomplete, the first page's observation stays accepted, nothing of
// the later pages is, and the checkpoint stays where the last complete scan
// left it; once the package is back and no longer crashes, the next scan
// completes, advances the checkpoint and accepts each observation once.
func TestDrillPackageCrashInIngressReconcileAdvancesNoCheckpoint(t *testing.T) {
	pages := filepath.Join(t.TempDir(), "pages.json")
	writePages(t, pages, probe.HookPages{Checkpoint: "cp0", Pages: []probe.HookPage{{Items: []probe.HookObserved{{Key: "base", Version: "1"}}}}})
	r := startHookRigWith(t, func(crash string) string { return fmt.Sprintf(reconcileConfig, crash, pages) })
	// Negative control: a scan with nothing armed completes and advances.
	if s := r.scanNow(); !s.Complete || s.Checkpoint != "cp0" || s.Error != nil {
		t.Fatalf("a scan with nothing armed: %+v", s)
	}
	r.wantKeys(1, "base")
	if r.restarts() != 0 {
		t.Fatal("probe-hook restarted though nothing crashed it")
	}

	iterations := scale(2, 6)
	prev := "cp0"
	for i := range iterations {
		kept, lost, after := fmt.Sprintf("kept%d", i), fmt.Sprintf("lost%d", i), fmt.Sprintf("after%d", i)
		cp := fmt.Sprintf("cp%d", i+1)
		writePages(t, pages, probe.HookPages{Checkpoint: cp, Pages: []probe.HookPage{
			{Items: []probe.HookObserved{{Key: kept, Version: "1"}}},
			{Items: []probe.HookObserved{{Key: lost, Version: "1"}}, Crash: "reconcile"},
			{Items: []probe.HookObserved{{Key: after, Version: "1"}}},
		}})
		before := r.restarts()
		r.arm("reconcile")
		s := r.scanNow()
		if s.Complete || s.Error == nil || s.Checkpoint != prev {
			t.Fatalf("iteration %d: the package crashed inside ingress.reconcile, yet the scan answered %+v", i, s)
		}
		r.waitBack(before)
		src := r.source()
		if src.Checkpoint != prev || src.LastScan == nil || src.LastScan.Complete {
			t.Fatalf("iteration %d: after the crashed scan the source is %+v; want checkpoint %s and an incomplete last scan", i, src, prev)
		}
		r.wantKeys(1, kept)
		r.wantKeys(0, lost, after)

		r.disarm("reconcile")
		s = r.scanNow()
		if !s.Complete || s.Checkpoint != cp || s.Pages != 3 {
			t.Fatalf("iteration %d: the scan after the package was mended: %+v, want complete at %s", i, s, cp)
		}
		if again := r.scanNow(); !again.Complete || again.Accepted != 0 {
			t.Fatalf("iteration %d: a scan seeing the same pages again: %+v, want nothing accepted", i, again)
		}
		r.wantKeys(1, kept, lost, after)
		if src := r.source(); src.Checkpoint != cp {
			t.Fatalf("iteration %d: after a complete scan the source's checkpoint is %q, want %s", i, src.Checkpoint, cp)
		}
		prev = cp
	}
	report(t, "crash inside ingress.reconcile: %d scans cut short on their second page advanced no checkpoint and accepted nothing past the first page; after %d restarts each next scan completed, every observation accepted once",
		iterations, r.restarts())
}
