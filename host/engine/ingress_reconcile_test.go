package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// srcName is the one source the reconcile tests scan.
const srcName = "feed/main"

// feedManifest is a package with one ingress type of two families.
func feedManifest() *protocol.Manifest {
	return &protocol.Manifest{
		Name: "feed", Protocol: protocol.Versions, Command: []string{"feed"},
		Provides: protocol.Provides{
			Extensions: []protocol.ExtensionType{{Type: "feed", Ingress: true, Families: []string{"feed.item", "feed.other"}}},
			Families:   []protocol.Family{{Name: "feed.item", Rederivable: true}, {Name: "feed.other", Rederivable: true}},
			Schemas:    []protocol.Schema{{Base: "feed.item", Versions: []int{1}}, {Base: "feed.other", Versions: []int{1}}},
		},
	}
}

// pageFunc answers one ingress.reconcile call.
type pageFunc func(ctx context.Context, p protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error)

// fakeFeed is the running package: ingress.reconcile answers through a
// func a test sets, and every call's params are kept.
type fakeFeed struct {
	m *protocol.Manifest

	mu     sync.Mutex
	page   pageFunc
	params []protocol.IngressReconcileParams
}

func (f *fakeFeed) Call(ctx context.Context, pkg, method string, params, result any) error {
	if pkg != f.m.Name {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	if method != protocol.MethodIngressReconcile {
		return protocol.Errorf(protocol.ErrMethodNotFound, "%s", method)
	}
	p := params.(protocol.IngressReconcileParams)
	f.mu.Lock()
	f.params = append(f.params, p)
	page := f.page
	f.mu.Unlock()
	res, err := page(ctx, p)
	if err != nil {
		return err
	}
	// Through JSON, as the wire carries it.
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

func (f *fakeFeed) Manifest(pkg string) (*protocol.Manifest, bool) { return f.m, pkg == f.m.Name }
func (f *fakeFeed) RouteHandlerOwner(string) string                { return "" }
func (f *fakeFeed) WorkKindOwner(string) (string, protocol.WorkKind) {
	return "", protocol.WorkKind{}
}
func (f *fakeFeed) RecurrenceOwner(string) string { return "" }

func (f *fakeFeed) set(p pageFunc) {
	f.mu.Lock()
	f.page = p
	f.mu.Unlock()
}

func (f *fakeFeed) calls() []protocol.IngressReconcileParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]protocol.IngressReconcileParams(nil), f.params...)
}

// feedSources registers srcName for feed.
type feedSources struct{}

func (feedSources) WebhookPaths() map[string]string { return nil }
func (feedSources) IngressSources() map[string][]protocol.Source {
	return map[string][]protocol.Source{"feed": {{Name: srcName, Families: []string{"feed.item", "feed.other"}, Reconcile: true}}}
}

// feedRig is an engine on a real store over the fake feed, not started:
// each test runs its scans itself.
type feedRig struct {
	t   *testing.T
	db  *pebblekv.DB
	pkg *fakeFeed
	e   *Engine
}

func newFeedRig(t *testing.T, clock Clock) *feedRig {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg, err := config.Parse([]byte(`{"scopes":[{"id":"s1","entries":[{"name":"main","type":"feed"}]},{"id":"other"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gen := &config.Generation{ID: 1, Config: cfg}
	pkg := &fakeFeed{m: feedManifest()}
	e := New(Deps{DB: db, Packages: pkg, Generation: func() *config.Generation { return gen }, Clock: clock})
	e.SetWebhookRoutes(feedSources{})
	return &feedRig{t: t, db: db, pkg: pkg, e: e}
}

// obs is an observation of item at version in s1 with data.
func obs(item, version, data string) protocol.Observation {
	return protocol.Observation{Item: item, Version: version, Scope: "s1", Type: "feed.item",
		Payload: protocol.Payload{Schema: "feed.item.v1", Data: jsontext.Value(data)}}
}

// pages answers a scan of the given pages in order (page_token "p<n>"
// names page n), the last complete with checkpoint cp.
func pages(cp string, ps ...[]protocol.Observation) pageFunc {
	return func(_ context.Context, p protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
		n := 0
		if p.PageToken != "" {
			if _, err := fmt.Sscanf(p.PageToken, "p%d", &n); err != nil {
				return protocol.IngressReconcileResult{}, protocol.Errorf(protocol.ErrInvalid, "bad token %q", p.PageToken)
			}
		}
		res := protocol.IngressReconcileResult{Observations: ps[n]}
		if n == len(ps)-1 {
			res.Complete, res.Checkpoint = true, cp
		} else {
			res.NextPageToken = fmt.Sprintf("p%d", n+1)
		}
		return res, nil
	}
}

func (r *feedRig) scan() (ReconcileReport, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return r.e.Reconcile(ctx, "feed", srcName)
}

func (r *feedRig) events() []pebblekv.Event {
	r.t.Helper()
	var out []pebblekv.Event
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		out, err = rd.Events(0, pebblekv.MaxEvents)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *feedRig) deliveries() []string {
	r.t.Helper()
	var out []string
	for _, ev := range r.events() {
		out = append(out, ev.DeliveryID)
	}
	return out
}

func (r *feedRig) checkpoint() (pebblekv.Checkpoint, bool) {
	r.t.Helper()
	var cp pebblekv.Checkpoint
	var found bool
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		cp, found, err = rd.Checkpoint(srcName)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return cp, found
}

func TestReconcileCompleteScanAdvancesCheckpoint(t *testing.T) {
	r := newFeedRig(t, nil)
	if _, found := r.checkpoint(); found {
		t.Fatal("a checkpoint before any scan")
	}
	r.pkg.set(pages("cp1", []protocol.Observation{obs("a", "1", `{"n":1}`), obs("b", "1", `{"n":2}`)}, []protocol.Observation{obs("c", "7", `{"n":3}`)}))
	rep, err := r.scan()
	if err != nil || !rep.Complete || rep.Pages != 2 || rep.Added != 3 || rep.Checkpoint != "cp1" {
		t.Fatalf("scan: %+v, %v; want complete, 2 pages, 3 added, checkpoint cp1", rep, err)
	}
	if got := strings.Join(r.deliveries(), " "); got != "a@1 b@1 c@7" {
		t.Fatalf("Events by delivery ID: %s, want a@1 b@1 c@7", got)
	}
	ev := r.events()[0]
	if ev.Source != srcName || ev.Scope != "s1" || ev.Type != "feed.item" || string(ev.Payload.Data) != `{"n":1}` {
		t.Fatalf("the first Event: %+v", ev)
	}
	cp, found := r.checkpoint()
	if !found || cp.Checkpoint != "cp1" || cp.Owner != "feed" || cp.Scans != 1 {
		t.Fatalf("checkpoint %+v (found %v), want cp1 after one scan", cp, found)
	}
	// The next scan starts from it, and sees nothing new.
	r.pkg.set(pages("cp2", []protocol.Observation{obs("a", "1", `{"n":1}`)}))
	rep, err = r.scan()
	if err != nil || !rep.Complete || rep.Added != 0 {
		t.Fatalf("second scan: %+v, %v; want complete with nothing added", rep, err)
	}
	calls := r.pkg.calls()
	first, second := calls[0], calls[len(calls)-1]
	if first.Checkpoint != "" || second.Checkpoint != "cp1" || second.PageToken != "" || calls[1].PageToken != "p1" {
		t.Fatalf("checkpoints and tokens asked: %+v", calls)
	}
	if first.Limits != (protocol.ReconcileLimits{Items: protocol.ReconcilePageItems, Bytes: protocol.ReconcilePageBytes}) {
		t.Fatalf("limits asked %+v, want the runtime's", first.Limits)
	}
	if cp, _ := r.checkpoint(); cp.Checkpoint != "cp2" || cp.Scans != 2 {
		t.Fatalf("checkpoint after the second scan %+v, want cp2", cp)
	}
}

// failPage2 answers page 1 (items a@1, b@1) and then fails page 2 with fail.
func failPage2(fail pageFunc) pageFunc {
	good := pages("never", []protocol.Observation{obs("a", "1", `{"n":1}`), obs("b", "1", `{"n":2}`)}, nil)
	return func(ctx context.Context, p protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
		if p.PageToken == "" {
			return good(ctx, p)
		}
		return fail(ctx, p)
	}
}

func TestReconcileScanFailingOnPage2AdvancesNoCheckpoint(t *testing.T) {
	tests := []struct {
		name string
		fail pageFunc
		// narrow, when set, changes the reconciler's limits or deadline.
		narrow func(*reconciler)
		code   *protocol.Error
	}{
		{name: "the package dies", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			return protocol.IngressReconcileResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")
		}, code: protocol.ErrTransport},
		{name: "the page times out", fail: func(ctx context.Context, _ protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			<-ctx.Done()
			return protocol.IngressReconcileResult{}, ctx.Err()
		}, narrow: func(rc *reconciler) { rc.pageDeadline = 100 * time.Millisecond }, code: protocol.ErrUnavailable},
		{name: "the page is over the item limit", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			return protocol.IngressReconcileResult{Complete: true, Observations: []protocol.Observation{
				obs("c", "1", `{}`), obs("d", "1", `{}`), obs("e", "1", `{}`)}}, nil
		}, narrow: func(rc *reconciler) { rc.limits.Items = 2 }, code: protocol.ErrTooLarge},
		{name: "the page is over the byte limit", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			return protocol.IngressReconcileResult{Complete: true, Observations: []protocol.Observation{
				obs("c", "1", `{"pad":"`+strings.Repeat("x", 400)+`"}`)}}, nil
		}, narrow: func(rc *reconciler) { rc.limits.Bytes = 300 }, code: protocol.ErrTooLarge},
		{name: "the page neither completes nor names the next", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			return protocol.IngressReconcileResult{Observations: []protocol.Observation{obs("c", "1", `{}`)}}, nil
		}, code: protocol.ErrInvalid},
		{name: "an observation of a family the source lacks", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			o := obs("c", "1", `{}`)
			o.Type = "feed.unknown"
			return protocol.IngressReconcileResult{Complete: true, Observations: []protocol.Observation{o}}, nil
		}, code: protocol.ErrInvalid},
		{name: "an observation into a scope that does not use the package", fail: func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
			o := obs("c", "1", `{}`)
			o.Scope = "other"
			return protocol.IngressReconcileResult{Complete: true, Observations: []protocol.Observation{o}}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFeedRig(t, nil)
			r.pkg.set(pages("cp0", []protocol.Observation{obs("z", "1", `{}`)}))
			if _, err := r.scan(); err != nil {
				t.Fatal(err)
			}
			if tt.narrow != nil {
				tt.narrow(r.e.reconcile)
			}
			r.pkg.set(failPage2(tt.fail))
			rep, err := r.scan()
			if err == nil || rep.Complete {
				t.Fatalf("a scan failing on page 2: %+v, %v; want an error, incomplete", rep, err)
			}
			if tt.code != nil && !errors.Is(err, tt.code) {
				t.Fatalf("error %v, want %v", err, tt.code)
			}
			if cp, _ := r.checkpoint(); cp.Checkpoint != "cp0" || cp.Scans != 1 {
				t.Fatalf("checkpoint after a partial scan %+v, want cp0 unchanged", cp)
			}
			if got := strings.Join(r.deliveries(), " "); got != "z@1 a@1 b@1" {
				t.Fatalf("Events after a partial scan: %s, want page 1's accepted (z@1 a@1 b@1)", got)
			}
			// The retry starts from the old checkpoint and accepts page 1
			// once.
			r.pkg.set(pages("cp1", []protocol.Observation{obs("a", "1", `{"n":1}`), obs("b", "1", `{"n":2}`)}, []protocol.Observation{obs("c", "1", `{}`)}))
			rep, err = r.scan()
			if err != nil || !rep.Complete || rep.Added != 1 {
				t.Fatalf("the retried scan: %+v, %v; want complete, one added", rep, err)
			}
			if calls := r.pkg.calls(); calls[len(calls)-2].Checkpoint != "cp0" {
				t.Fatalf("the retry asked from checkpoint %q, want cp0", calls[len(calls)-2].Checkpoint)
			}
			if got := strings.Join(r.deliveries(), " "); got != "z@1 a@1 b@1 c@1" {
				t.Fatalf("Events after the retry: %s, want each once", got)
			}
			if cp, _ := r.checkpoint(); cp.Checkpoint != "cp1" {
				t.Fatalf("checkpoint after the retry %+v, want cp1", cp)
			}
		})
	}
}

func TestReconcileConflictingReobservationIsRefusedTheSameEveryTime(t *testing.T) {
	r := newFeedRig(t, nil)
	r.pkg.set(pages("cp1", []protocol.Observation{obs("a", "1", `{"n":1,"m":2}`)}))
	if _, err := r.scan(); err != nil {
		t.Fatal(err)
	}
	// The same envelope encoded otherwise is no conflict, and nothing new.
	r.pkg.set(pages("cp2", []protocol.Observation{obs("a", "1", `{ "m": 2, "n": 1 }`)}))
	if rep, err := r.scan(); err != nil || rep.Added != 0 || !rep.Complete {
		t.Fatalf("re-observing the same envelope: %+v, %v; want complete, nothing added", rep, err)
	}
	// a@1 with other data, beside a new item: the page is refused whole.
	r.pkg.set(pages("cp3", []protocol.Observation{obs("b", "1", `{}`), obs("a", "1", `{"n":9}`)}))
	var first string
	for i := range 3 {
		rep, err := r.scan()
		if !errors.Is(err, protocol.ErrConflict) || rep.Complete || rep.Added != 0 {
			t.Fatalf("scan %d with a conflicting re-observation: %+v, %v; want conflict, incomplete, none added", i, rep, err)
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("refusal %d: %q, want the same as the first: %q", i, err, first)
		}
	}
	if !strings.Contains(first, "a@1") {
		t.Fatalf("the refusal %q does not name the observation", first)
	}
	if got := strings.Join(r.deliveries(), " "); got != "a@1" {
		t.Fatalf("Events after refused pages: %s, want only the first a@1", got)
	}
	if ev := r.events()[0]; string(ev.Payload.Data) != `{"n":1,"m":2}` {
		t.Fatalf("the bound Event's data changed: %s", ev.Payload.Data)
	}
	if cp, _ := r.checkpoint(); cp.Checkpoint != "cp2" {
		t.Fatalf("checkpoint after refused scans %+v, want cp2", cp)
	}
	var cs []pebblekv.ObservationConflict
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		cs, err = rd.ObservationConflicts(srcName, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Item != "a" || cs[0].Count != 3 || cs[0].Bound == cs[0].Refused {
		t.Fatalf("recorded conflicts %+v, want a@1 refused 3 times", cs)
	}
}

func TestReconcileIdentityBindsScopeTypeAndWithinAPage(t *testing.T) {
	other := obs("a", "1", `{}`)
	other.Type = "feed.other"
	tests := []struct {
		name string
		page []protocol.Observation
	}{
		{"the same identity twice on one page with other data", []protocol.Observation{obs("a", "1", `{}`), obs("a", "1", `{"x":1}`)}},
		{"the same identity with another type", []protocol.Observation{obs("a", "1", `{}`), other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFeedRig(t, nil)
			r.pkg.set(pages("cp", tt.page))
			if _, err := r.scan(); !errors.Is(err, protocol.ErrConflict) {
				t.Fatalf("scan: %v, want conflict", err)
			}
			if n := len(r.events()); n != 0 {
				t.Fatalf("%d Events accepted from a refused page", n)
			}
			if _, found := r.checkpoint(); found {
				t.Fatal("a refused scan wrote a checkpoint")
			}
		})
	}
	// Negative control: the same identity twice with the same envelope is
	// accepted once.
	r := newFeedRig(t, nil)
	r.pkg.set(pages("cp", []protocol.Observation{obs("a", "1", `{}`), obs("a", "1", `{}`)}))
	if rep, err := r.scan(); err != nil || rep.Added != 1 {
		t.Fatalf("a repeated identical observation: %+v, %v; want one added", rep, err)
	}
}

func TestReconcileRefusesUnknownSourceAndBadIdentity(t *testing.T) {
	r := newFeedRig(t, nil)
	ctx := context.Background()
	if _, err := r.e.Reconcile(ctx, "feed", "feed/else"); !errors.Is(err, protocol.ErrNotFound) {
		t.Fatalf("an unregistered source: %v, want not_found", err)
	}
	for _, o := range []protocol.Observation{obs("a@b", "1", `{}`), obs("", "1", `{}`), obs("a", "", `{}`)} {
		r.pkg.set(pages("cp", []protocol.Observation{o}))
		if _, err := r.scan(); !errors.Is(err, protocol.ErrInvalid) {
			t.Fatalf("observation %q@%q: %v, want invalid", o.Item, o.Version, err)
		}
	}
	if n := len(r.events()); n != 0 {
		t.Fatalf("%d Events from refused observations", n)
	}
}

func TestReconcileRunsEachSourceOnTheClockAndRetriesAFailedScanSooner(t *testing.T) {
	clock := newSchedClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	r := newFeedRig(t, clock)
	good := pages("cp1", []protocol.Observation{obs("a", "1", `{}`)})
	var mu sync.Mutex
	failed := false
	r.pkg.set(func(ctx context.Context, p protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if !failed {
			failed = true
			return protocol.IngressReconcileResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")
		}
		return good(ctx, p)
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.e.Start(ctx)
	t.Cleanup(func() {
		cancel()
		if err := r.e.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	// advanceUntil moves the clock by step until n calls were made, and
	// answers how far it moved.
	advanceUntil := func(n int, step time.Duration) time.Duration {
		t.Helper()
		moved := time.Duration(0)
		deadline := time.Now().Add(waitFor)
		for len(r.pkg.calls()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d reconcile calls after moving the clock %s, want %d", len(r.pkg.calls()), moved, n)
			}
			select {
			case <-clock.slept:
			case <-time.After(20 * time.Millisecond):
			}
			clock.advance(step)
			moved += step
		}
		return moved
	}
	waitCalls := func(n int) {
		t.Helper()
		deadline := time.Now().Add(waitFor)
		for len(r.pkg.calls()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d reconcile calls, want %d", len(r.pkg.calls()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCalls(1) // at once, at the start
	if _, found := r.checkpoint(); found {
		t.Fatal("a failed scan wrote a checkpoint")
	}
	if moved := advanceUntil(2, time.Second); moved >= protocol.ReconcileIntervalMillis*time.Millisecond {
		t.Fatalf("the failed scan was retried after %s, want sooner than the interval", moved)
	}
	deadline := time.Now().Add(waitFor)
	for cp, _ := r.checkpoint(); cp.Checkpoint != "cp1"; cp, _ = r.checkpoint() {
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %+v after the retried scan, want cp1", cp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if moved := advanceUntil(3, 10*time.Second); moved < protocol.ReconcileIntervalMillis*time.Millisecond {
		t.Fatalf("a complete scan was followed by the next after %s, want the interval", moved)
	}
}

func TestReconcileSourceScansNowAndSourcesShowTheLastScan(t *testing.T) {
	r := newFeedRig(t, nil)
	ctx := context.Background()
	st, err := r.e.Sources()
	if err != nil || len(st) != 1 || st[0].Package != "feed" || st[0].Source != srcName || st[0].Found || st[0].LastScan != nil {
		t.Fatalf("the sources before any scan: %+v, %v", st, err)
	}
	r.pkg.set(pages("cp1", []protocol.Observation{obs("a", "1", `{}`)}))
	rep, err := r.e.ReconcileSource(ctx, srcName)
	if err != nil || !rep.Complete || rep.Package != "feed" || rep.Added != 1 || rep.Checkpoint != "cp1" {
		t.Fatalf("scanning %s now: %+v, %v", srcName, rep, err)
	}
	st, _ = r.e.Sources()
	if !st[0].Found || st[0].Checkpoint.Checkpoint != "cp1" || st[0].LastScan == nil || st[0].LastScan.Err != nil || !st[0].LastScan.Report.Complete {
		t.Fatalf("the sources after a complete scan: %+v", st)
	}
	// A scan cut short is the last scan, with its error; the checkpoint
	// stays the complete one's.
	r.pkg.set(func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
		return protocol.IngressReconcileResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")
	})
	if _, err := r.e.ReconcileSource(ctx, srcName); protocol.CodeOf(err) != protocol.CodeTransport {
		t.Fatalf("a scan whose package died: %v, want transport", err)
	}
	st, _ = r.e.Sources()
	if st[0].Checkpoint.Checkpoint != "cp1" || st[0].LastScan == nil || protocol.CodeOf(st[0].LastScan.Err) != protocol.CodeTransport || st[0].LastScan.Report.Complete {
		t.Fatalf("the sources after a failed scan: %+v", st)
	}
	if _, err := r.e.ReconcileSource(ctx, "feed/nope"); protocol.CodeOf(err) != protocol.CodeNotFound {
		t.Fatalf("scanning an unregistered source: %v, want not_found", err)
	}
}

// pushOnlySources registers srcName as push-only: not marked reconcile.
type pushOnlySources struct{}

func (pushOnlySources) WebhookPaths() map[string]string { return nil }
func (pushOnlySources) IngressSources() map[string][]protocol.Source {
	return map[string][]protocol.Source{"feed": {{Name: srcName, Families: []string{"feed.item"}}}}
}

// TestPushOnlySourceIsNeverScanned: a source its package's configure does
// not mark reconcile is left out of the schedule, an operator's scan of it
// is refused invalid saying it is push-only, and the package is never
// asked; the same source marked reconcile is scanned (the control).
func TestPushOnlySourceIsNeverScanned(t *testing.T) {
	r := newFeedRig(t, nil)
	r.pkg.set(pages("cp", []protocol.Observation{obs("a", "1", `{}`)}))
	r.e.SetWebhookRoutes(pushOnlySources{})
	if got := r.e.reconcile.targets(); len(got) != 0 {
		t.Errorf("scheduled %+v, want no push-only source", got)
	}
	_, err := r.e.Reconcile(context.Background(), "feed", srcName)
	if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), "push-only") {
		t.Errorf("scanning a push-only source: %v, want invalid naming it push-only", err)
	}
	if _, err := r.e.ReconcileSource(context.Background(), srcName); !errors.Is(err, protocol.ErrInvalid) {
		t.Errorf("an operator's scan of a push-only source: %v, want invalid", err)
	}
	if n := len(r.pkg.calls()); n != 0 {
		t.Errorf("%d ingress.reconcile calls for a push-only source", n)
	}
	r.e.SetWebhookRoutes(feedSources{})
	if got := r.e.reconcile.targets(); len(got) != 1 {
		t.Errorf("scheduled %+v, want the source marked reconcile", got)
	}
	if _, err := r.e.Reconcile(context.Background(), "feed", srcName); err != nil || len(r.pkg.calls()) != 1 {
		t.Errorf("scanning it marked reconcile: %v after %d calls", err, len(r.pkg.calls()))
	}
}
