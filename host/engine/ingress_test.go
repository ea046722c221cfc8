package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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

// hookManifest is a package with one ingress type and webhooks.
func hookManifest() *protocol.Manifest {
	return &protocol.Manifest{
		Name: "hook", Protocol: protocol.Versions, Command: []string{"hook"},
		Provides: protocol.Provides{
			Webhooks:   true,
			Extensions: []protocol.ExtensionType{{Type: "hook", Ingress: true, Families: []string{"hook.received"}}},
			Families:   []protocol.Family{{Name: "hook.received"}},
			Schemas:    []protocol.Schema{{Base: "hook.received", Versions: []int{1}}},
		},
	}
}

// fakeHook stands in for the running package: webhook.handle and
// ingress.push answer through funcs a test sets, and it counts calls.
type fakeHook struct {
	m *protocol.Manifest

	mu     sync.Mutex
	handle func(protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error)
	push   func(protocol.Delivery) (protocol.IngressPushResult, error)
	// reconcile answers ingress.reconcile; nil answers method_not_found.
	reconcile pageFunc
	calls     map[string]int
}

func (f *fakeHook) Call(_ context.Context, pkg, method string, params, result any) error {
	f.mu.Lock()
	f.calls[method]++
	handle, push, reconcile := f.handle, f.push, f.reconcile
	f.mu.Unlock()
	if pkg != f.m.Name {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	switch method {
	case protocol.MethodWebhookHandle:
		res, err := handle(params.(protocol.WebhookHandleParams))
		*result.(*protocol.WebhookHandleResult) = res
		return err
	case protocol.MethodIngressPush:
		res, err := push(params.(protocol.Delivery))
		*result.(*protocol.IngressPushResult) = res
		return err
	case protocol.MethodIngressReconcile:
		if reconcile != nil {
			res, err := reconcile(context.Background(), params.(protocol.IngressReconcileParams))
			*result.(*protocol.IngressReconcileResult) = res
			return err
		}
	}
	return protocol.Errorf(protocol.ErrMethodNotFound, "%s", method)
}

func (f *fakeHook) Manifest(pkg string) (*protocol.Manifest, bool) { return f.m, pkg == f.m.Name }
func (f *fakeHook) RouteHandlerOwner(string) string                { return "" }
func (f *fakeHook) WorkKindOwner(string) (string, protocol.WorkKind) {
	return "", protocol.WorkKind{}
}
func (f *fakeHook) RecurrenceOwner(string) string { return "" }

func (f *fakeHook) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// routes is a fixed WebhookRoutes.
type routes map[string]string

func (r routes) WebhookPaths() map[string]string { return r }

// ingressRig is an engine on a real store with the fake package and the
// webhook listener on loopback.
type ingressRig struct {
	t    *testing.T
	db   *pebblekv.DB
	pkg  *fakeHook
	e    *Engine
	base string
}

// okHandle is a package that verifies nothing and delivers the body (its
// size when it is not JSON) under the X-Delivery header's ID.
func okHandle(p protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
	id := ""
	if v := p.Headers["X-Delivery"]; len(v) > 0 {
		id = v[0]
	}
	data := jsontext.Value(p.Body)
	if !data.IsValid() {
		data = jsontext.Value(fmt.Sprintf(`{"bytes":%d}`, len(p.Body)))
	}
	return protocol.WebhookHandleResult{Status: 202, Deliveries: []protocol.Delivery{{
		Source: "hook/s1/a", DeliveryID: id, Payload: protocol.Payload{Data: data},
	}}}, nil
}

// okPush drafts one hook.received Event in scope s1.
func okPush(d protocol.Delivery) (protocol.IngressPushResult, error) {
	return protocol.IngressPushResult{Events: []protocol.EventDraft{{
		Scope: "s1", Type: "hook.received", Payload: protocol.Payload{Schema: "hook.received.v1", Data: d.Payload.Data},
	}}}, nil
}

func newIngressRig(t *testing.T) *ingressRig {
	t.Helper()
	r := buildIngressRig(t, routes{"/hook/s1/a": "hook", "/hook/s1/a/deep": "hook"})
	r.e.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.e.Stop(ctx); err != nil {
			t.Errorf("stopping the engine: %v", err)
		}
	})
	return r
}

// buildIngressRig is the ingress rig with w's routes, its listener serving
// until the test ends, its engine not started: what a test needs of it, it
// runs itself (a scan, a delivery).
func buildIngressRig(t *testing.T, w WebhookRoutes) *ingressRig {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg, err := config.Parse([]byte(`{"scopes":[{"id":"s1","entries":[{"name":"a","type":"hook"}]},{"id":"other"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gen := &config.Generation{ID: 1, Config: cfg}
	pkg := &fakeHook{m: hookManifest(), calls: map[string]int{}, handle: okHandle, push: okPush}
	e := New(Deps{DB: db, Packages: pkg, Generation: func() *config.Generation { return gen }})
	e.SetWebhookRoutes(w)
	addr, err := e.ListenWebhooks(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return &ingressRig{t: t, db: db, pkg: pkg, e: e, base: "http://" + addr.String()}
}

// post sends body to path with a delivery ID and returns the status.
func (r *ingressRig) post(path, delivery string, body []byte) int {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.base+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if delivery != "" {
		req.Header.Set("X-Delivery", delivery)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("POST %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// events is every Event of the log.
func (r *ingressRig) events() []pebblekv.Event {
	r.t.Helper()
	var out []pebblekv.Event
	err := r.db.View(func(rd *pebblekv.Reader) error {
		var err error
		out, err = rd.Events(0, pebblekv.MaxEvents)
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *ingressRig) wantEvents(what string, n int) {
	r.t.Helper()
	if got := r.events(); len(got) != n {
		r.t.Fatalf("%s: the log holds %d Events, want %d: %+v", what, len(got), n, got)
	}
}

func TestWebhookAnswers2xxOnlyOnceItsEventIsInTheStore(t *testing.T) {
	r := newIngressRig(t)
	if got := r.post("/hook/s1/a", "d1", []byte(`{"n":1}`)); got != 202 {
		t.Fatalf("a good request: status %d, want the package's 202", got)
	}
	// No waiting: the answer came after the commit.
	evs := r.events()
	if len(evs) != 1 {
		t.Fatalf("after the 202 the log holds %d Events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Scope != "s1" || ev.Source != "hook/s1/a" || ev.DeliveryID != "d1" || ev.Type != "hook.received" ||
		!strings.Contains(string(ev.Payload.Data), `"n":1`) {
		t.Fatalf("the accepted Event is %+v", ev)
	}
}

func TestWebhookFailureAcceptsNothingAndTheRetryIsAcceptedOnce(t *testing.T) {
	crash := func(protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
		return protocol.WebhookHandleResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")
	}
	pushCrash := func(protocol.Delivery) (protocol.IngressPushResult, error) {
		return protocol.IngressPushResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")
	}
	gone := func(protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
		return protocol.WebhookHandleResult{}, protocol.Errorf(protocol.ErrUnavailable, "not running")
	}
	foreignScope := func(d protocol.Delivery) (protocol.IngressPushResult, error) {
		res, _ := okPush(d)
		res.Events[0].Scope = "other"
		return res, nil
	}
	undeclared := func(d protocol.Delivery) (protocol.IngressPushResult, error) {
		res, _ := okPush(d)
		res.Events[0].Type = "hook.unknown"
		return res, nil
	}
	// One good draft and one refused: the good one is not accepted either.
	halfGood := func(d protocol.Delivery) (protocol.IngressPushResult, error) {
		res, _ := okPush(d)
		bad := res.Events[0]
		bad.DeliveryID, bad.Type = d.DeliveryID+"/2", "hook.unknown"
		res.Events = append(res.Events, bad)
		return res, nil
	}
	foreignSource := func(p protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
		res, _ := okHandle(p)
		res.Deliveries[0].Source = "hello/s1"
		return res, nil
	}
	noID := func(p protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
		res, _ := okHandle(p)
		res.Deliveries[0].DeliveryID = ""
		return res, nil
	}
	for _, tc := range []struct {
		name   string
		handle func(protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error)
		push   func(protocol.Delivery) (protocol.IngressPushResult, error)
		status int
	}{
		{"crash in webhook.handle", crash, okPush, http.StatusServiceUnavailable},
		{"crash in ingress.push", okHandle, pushCrash, http.StatusServiceUnavailable},
		{"package not running", gone, okPush, http.StatusServiceUnavailable},
		{"event in a scope that does not use the package", okHandle, foreignScope, http.StatusBadGateway},
		{"event of an undeclared family", okHandle, undeclared, http.StatusBadGateway},
		{"one refused event of two", okHandle, halfGood, http.StatusBadGateway},
		{"delivery from another package's source", foreignSource, okPush, http.StatusBadGateway},
		{"delivery without an id", noID, okPush, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIngressRig(t)
			r.pkg.handle, r.pkg.push = tc.handle, tc.push
			if got := r.post("/hook/s1/a", "d1", []byte(`{}`)); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
			r.wantEvents("after the failure", 0)
			r.pkg.handle, r.pkg.push = okHandle, okPush
			for i := range 2 {
				if got := r.post("/hook/s1/a", "d1", []byte(`{}`)); got != 202 {
					t.Fatalf("retry %d: status %d, want 202", i, got)
				}
			}
			r.wantEvents("after the retry and its replay", 1)
		})
	}
}

func TestWebhookRefusalIsThePackagesStatusWithNothingAccepted(t *testing.T) {
	r := newIngressRig(t)
	// A package that refuses 401 but names a delivery anyway: the delivery
	// is not taken.
	r.pkg.handle = func(p protocol.WebhookHandleParams) (protocol.WebhookHandleResult, error) {
		res, _ := okHandle(p)
		res.Status = http.StatusUnauthorized
		return res, nil
	}
	if got := r.post("/hook/s1/a", "d1", []byte(`{}`)); got != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", got)
	}
	r.wantEvents("after a 401", 0)
	if n := r.pkg.count(protocol.MethodIngressPush); n != 0 {
		t.Fatalf("ingress.push was called %d times after a refusal", n)
	}
}

func TestWebhookReplayedDeliveryIsAcceptedOnce(t *testing.T) {
	r := newIngressRig(t)
	for i := range 3 {
		if got := r.post("/hook/s1/a", "same", []byte(fmt.Sprintf(`{"try":%d}`, i))); got != 202 {
			t.Fatalf("delivery %d: status %d", i, got)
		}
	}
	r.wantEvents("after three deliveries of one ID", 1)
	// Negative control: another ID is another Event.
	if got := r.post("/hook/s1/a", "next", []byte(`{}`)); got != 202 {
		t.Fatalf("another delivery: status %d", got)
	}
	r.wantEvents("after another ID", 2)
}

func TestWebhookPathsAndBodies(t *testing.T) {
	big := bytes.Repeat([]byte("x"), protocol.MaxWebhookBodyBytes+1)
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		status int
		events int
	}{
		{"registered path", "/hook/s1/a", []byte(`{}`), 202, 1},
		{"path beneath a registered one", "/hook/s1/a/x/y", []byte(`{}`), 202, 1},
		{"unknown path", "/hook/s1/b", []byte(`{}`), http.StatusNotFound, 0},
		{"a sibling that shares a prefix", "/hook/s1/ab", []byte(`{}`), http.StatusNotFound, 0},
		{"a path that climbs out", "/hook/s1/a/../../../hello", []byte(`{}`), http.StatusNotFound, 0},
		{"body over 1 MiB", "/hook/s1/a", big, http.StatusRequestEntityTooLarge, 0},
		{"body of exactly 1 MiB", "/hook/s1/a", big[:protocol.MaxWebhookBodyBytes], 202, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIngressRig(t)
			if got := r.post(tc.path, "d1", tc.body); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
			r.wantEvents(tc.name, tc.events)
			if tc.status == http.StatusNotFound || tc.status == http.StatusRequestEntityTooLarge {
				if n := r.pkg.count(protocol.MethodWebhookHandle); n != 0 {
					t.Fatalf("webhook.handle was called %d times for a request the host refuses itself", n)
				}
			}
		})
	}
}

func TestWebhookLongestRegisteredPathWins(t *testing.T) {
	paths := map[string]string{"/a": "one", "/a/b": "two", "/a/b/": "three-is-two", "/c/": "four"}
	for _, tc := range []struct{ path, want string }{
		{"/a", "one"}, {"/a/x", "one"}, {"/a/b", "three-is-two"}, {"/a/b/c", "three-is-two"},
		{"/ab", ""}, {"/c", "four"}, {"/c/d", "four"}, {"/", ""},
	} {
		got := ownerOf(paths, tc.path)
		// "/a/b" and "/a/b/" are one path; either registration may win.
		if tc.want == "three-is-two" && (got == "two" || got == "three-is-two") {
			continue
		}
		if got != tc.want {
			t.Errorf("ownerOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestDeliverAcceptsOnceAndAnswersTheEvents(t *testing.T) {
	r := newIngressRig(t)
	ctx := context.Background()
	p := protocol.IngressDeliverParams{Source: "hook/s1/a", DeliveryID: "r1", Body: []byte(`{"k":"v"}`)}
	res, err := r.e.Deliver(ctx, "hook", p)
	if err != nil || !res.Accepted || res.Duplicate || len(res.Events) != 1 || !res.Events[0].Added {
		t.Fatalf("first delivery: %+v, %v", res, err)
	}
	again, err := r.e.Deliver(ctx, "hook", p)
	if err != nil || !again.Accepted || !again.Duplicate || again.Events[0].EventID != res.Events[0].EventID || again.Events[0].Added {
		t.Fatalf("redelivery: %+v, %v", again, err)
	}
	r.wantEvents("after a delivery and its redelivery", 1)
	for _, tc := range []struct {
		name string
		p    protocol.IngressDeliverParams
		code *protocol.Error
	}{
		{"a body that is not JSON", protocol.IngressDeliverParams{Source: "hook/s1/a", DeliveryID: "r2", Body: []byte("hi")}, protocol.ErrInvalid},
		{"another package's source", protocol.IngressDeliverParams{Source: "hello", DeliveryID: "r2", Body: []byte("{}")}, protocol.ErrUnauthorized},
	} {
		if _, err := r.e.Deliver(ctx, "hook", tc.p); protocol.CodeOf(err) != tc.code.Code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code.Code)
		}
	}
	r.wantEvents("after refused deliveries", 1)
	var got protocol.IngressDeliverResult
	raw, _ := json.Marshal(res)
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Events) != 1 {
		t.Fatalf("the result does not round-trip: %s, %v", raw, err)
	}
}
