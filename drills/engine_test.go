package drills

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// The engine's crash drills: a package that dies inside webhook.handle,
// ingress.reconcile or route.match, and a daemon killed -9 right after it
// answered a webhook 2xx. The package that crashes is the probe's hook mode
// (probe-hook), installed beside the probe; it crashes while a file the
// request, page or Event names exists in the crash directory the config
// gives it.

// hookConfig has scope acme, whose probe-hook entry takes webhooks and
// whose probe-hook route crashes on armed Events, and scope calm, routed by
// the same package with nothing armed. %[1]q is the crash directory.
const hookConfig = `{
  "scopes": [
    {"id": "acme",
     "entries": [{"name": "in", "type": "probe-hook", "config": {"crash_dir": %[1]q}}],
     "routes": [{"handler": "probe-hook", "config": {"crash_dir": %[1]q}}]},
    {"id": "calm",
     "routes": [{"handler": "probe-hook"}]}
  ]
}`

// hookRig is a daemon running probe-hook, with its crash directory.
type hookRig struct {
	t     *testing.T
	e     *daemontest.Env
	crash string
	base  string
}

// startHookRig installs probe-hook, writes hookConfig and starts serve.
func startHookRig(t *testing.T) *hookRig {
	t.Helper()
	return startHookRigWith(t, func(crash string) string { return fmt.Sprintf(hookConfig, crash) })
}

// startHookRigWith installs probe-hook, writes the config cfg makes of the
// crash directory and starts serve.
func startHookRigWith(t *testing.T, cfg func(crash string) string) *hookRig {
	t.Helper()
	e := daemontest.New(t, bins)
	dir := filepath.Join(filepath.Dir(e.Config), "extensions", probe.HookName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(bins.Probe)
	if err != nil {
		t.Fatal(err)
	}
	m, err := probe.Hook().Manifest.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe-extension"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), m, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &hookRig{t: t, e: e, crash: t.TempDir()}
	e.WriteConfig(cfg(r.crash))
	e.Start()
	r.base = "http://" + webhookAddr(e)
	if x := e.Extension(probe.HookName); x.State != "running" {
		t.Fatalf("probe-hook is %s (%s), want running\n%s", x.State, x.LastError, e.Log)
	}
	return r
}

// webhookAddr waits for the webhook listener's address.
func webhookAddr(e *daemontest.Env) string {
	e.T.Helper()
	var addr string
	e.Eventually("the webhook listener listening", func() bool {
		st, err := e.C.Status(context.Background())
		addr = st.Webhooks
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning && addr != ""
	})
	return addr
}

// arm makes the package crash on what names name; disarm mends it.
func (r *hookRig) arm(name string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.crash, name), nil, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *hookRig) disarm(name string) {
	r.t.Helper()
	if err := os.Remove(filepath.Join(r.crash, name)); err != nil {
		r.t.Fatal(err)
	}
}

// post sends a request for key to acme's entry under delivery ID id,
// naming crash, and returns the status (0 when the connection failed).
func (r *hookRig) post(key, id, crash string) int {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.base+"/"+probe.HookName+"/acme/in",
		strings.NewReader(fmt.Sprintf(`{"key":%q}`, key)))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set(probe.HookDeliveryHeader, id)
	if crash != "" {
		req.Header.Set(probe.CrashHeader, crash)
	}
	return send(req)
}

// send does req and returns its status, 0 when there was no answer.
func send(req *http.Request) int {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// restarts is how often the package was restarted after a crash.
func (r *hookRig) restarts() int {
	r.t.Helper()
	return r.e.Extension(probe.HookName).Restarts
}

// waitBack waits until the package runs again after more than before
// crashes.
func (r *hookRig) waitBack(before int) {
	r.t.Helper()
	r.e.Eventually("probe-hook restarted after its crash", func() bool {
		x := r.e.Extension(probe.HookName)
		return x.Restarts > before && x.State == "running"
	})
}

// eventsOf is every Event of scope with delivery ID id.
func eventsOf(t *testing.T, e *daemontest.Env, scope, id string) []protocol.Event {
	t.Helper()
	var out []protocol.Event
	var after uint64
	for {
		page, err := e.C.Events(context.Background(), client.EventsQuery{Scope: scope, After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if ev.DeliveryID == id {
				out = append(out, ev)
			}
			after = max(after, ev.Sequence)
		}
		if len(page.Events) < 1000 {
			return out
		}
	}
}

// route is an Event's route decision now.
func route(t *testing.T, e *daemontest.Env, id string) client.RouteDecision {
	t.Helper()
	d, err := e.C.EventRoute(context.Background(), id, 0)
	if err != nil {
		t.Fatalf("the route of %s: %v", id, err)
	}
	return d
}

// waitRouted waits until the Event is routed to a Work and returns the
// decision.
func waitRouted(t *testing.T, e *daemontest.Env, id string) client.RouteDecision {
	t.Helper()
	var d client.RouteDecision
	e.Eventually("event "+id+" routed to a Work", func() bool {
		d = route(t, e, id)
		return d.State == client.RouteRouted && d.Work != ""
	})
	return d
}

// emit accepts an operator's Event in scope with data.
func emit(t *testing.T, e *daemontest.Env, scope, data string) protocol.Event {
	t.Helper()
	ev, err := e.C.Emit(context.Background(), client.EmitRequest{Scope: scope, Data: jsontext.Value(data)})
	if err != nil {
		t.Fatalf("emit in %s: %v", scope, err)
	}
	return ev
}

// TestDrillPackageCrashInWebhookHandleAcceptsNothing crashes the package
// inside webhook.handle: the request is answered non-2xx with nothing
// accepted, and once the package is back the sender's retry is accepted
// once and routed.
func TestDrillPackageCrashInWebhookHandleAcceptsNothing(t *testing.T) {
	r := startHookRig(t)
	// Negative control: a request naming a file nobody armed is served.
	if got := r.post("k-ok", "d-ok", "unarmed"); got != http.StatusAccepted {
		t.Fatalf("a request naming no armed file: status %d, want 202\n%s", got, r.e.Log)
	}
	if n := len(eventsOf(t, r.e, "acme", "d-ok")); n != 1 {
		t.Fatalf("the served request's Event is there %d times, want once", n)
	}
	if r.restarts() != 0 {
		t.Fatal("probe-hook restarted though nothing crashed it")
	}

	// Each crash doubles the package's restart backoff (reset only after a
	// minute up), so eight crashes already wait 12.8 s for the last start.
	iterations := scale(2, 8)
	refused, accepted := map[int]int{}, 0
	for i := range iterations {
		key, id := fmt.Sprintf("k%d", i), fmt.Sprintf("d%d", i)
		before := r.restarts()
		r.arm("hook")
		got := r.post(key, id, "hook")
		if got >= 200 && got < 300 {
			t.Fatalf("iteration %d: the package crashed inside webhook.handle, yet the request got %d", i, got)
		}
		refused[got]++
		r.waitBack(before)
		if evs := eventsOf(t, r.e, "acme", id); len(evs) != 0 {
			t.Fatalf("iteration %d: a request answered non-2xx accepted Events: %+v", i, evs)
		}
		r.disarm("hook")
		for try := range 2 {
			if got := r.post(key, id, "hook"); got != http.StatusAccepted {
				t.Fatalf("iteration %d: retry %d after the restart: status %d, want 202\n%s", i, try, got, r.e.Log)
			}
		}
		evs := eventsOf(t, r.e, "acme", id)
		if len(evs) != 1 {
			t.Fatalf("iteration %d: after two retries answered 202 the Event is there %d times, want once", i, len(evs))
		}
		accepted++
		waitRouted(t, r.e, evs[0].ID)
	}
	report(t, "crash inside webhook.handle: %d requests answered non-2xx (status: count %v) with nothing accepted; after %d restarts, %d deliveries retried twice, each accepted once",
		iterations, refused, r.restarts(), accepted)
}

// TestDrillPackageCrashInRouteMatchLeavesEventPending crashes the package
// inside route.match on one Event of scope acme: that Event stays pending
// (failed, retried), the scope's later Event waits behind it, another
// scope routed by the same package is routed meanwhile, and once the
// package no longer crashes both of acme's Events are routed.
func TestDrillPackageCrashInRouteMatchLeavesEventPending(t *testing.T) {
	r := startHookRig(t)
	e := r.e
	r.arm("route")
	first := emit(t, e, "acme", `{"key":"a1","crash":"route"}`)
	var d client.RouteDecision
	e.Eventually("the crashing route retried", func() bool {
		d = route(t, e, first.ID)
		return d.Attempts >= 2 && r.restarts() >= 2
	})
	if d.State != client.RouteFailed && d.State != client.RoutePending {
		t.Fatalf("the Event whose route crashed the package is %s, want failed or pending: %+v", d.State, d)
	}
	behind := emit(t, e, "acme", `{"key":"a2"}`)
	calm := emit(t, e, "calm", `{"key":"c1"}`)
	waitRouted(t, e, calm.ID)
	// The scope acme is still held: neither of its Events is routed while
	// the package crashes on the first.
	for _, ev := range []protocol.Event{first, behind} {
		if d := route(t, e, ev.ID); d.State == client.RouteRouted {
			t.Fatalf("event %s of acme routed while its scope's first Event still crashes the package: %+v", ev.ID, d)
		}
	}
	crashes := r.restarts()
	r.disarm("route")
	d = waitRouted(t, e, first.ID)
	if !d.Created {
		t.Fatalf("the first Event's decision did not create its Work: %+v", d)
	}
	waitRouted(t, e, behind.ID)
	works, err := e.C.Works(context.Background(), client.WorkQuery{Scope: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, w := range works.Work {
		if w.Kind != probe.HookKind {
			t.Fatalf("a Work of kind %s in acme: %+v", w.Kind, w)
		}
		for _, k := range w.Keys {
			keys[k] = true
		}
	}
	if !keys[probe.HookName+":a1"] || !keys[probe.HookName+":a2"] || len(works.Work) != 2 {
		t.Fatalf("acme's Work after the package was mended: %+v", works.Work)
	}
	report(t, "crash inside route.match: %d crashes over %d attempts left the Event pending; another scope routed meanwhile; routed once mended",
		crashes, d.Attempts)
}

// signedConfig is one scope acme with a signed webhook entry and the
// webhook route; the secret is OC_TEST_HOOK's.
const signedConfig = `{
  "scopes": [{
    "id": "acme",
    "entries": [{"name": "issues", "type": "webhook", "connection": "hooks",
                 "config": {"key_pointer": "/issue/id", "title_pointer": "/issue/title"}}],
    "routes": [{"handler": "webhook"}],
    "connections": ["hooks"]
  }],
  "connections": [{"name": "hooks", "type": "webhook-signing", "secret_refs": {"secret": "env:OC_TEST_HOOK"}}]
}`

// signedSecret signs the drill's webhook requests.
const signedSecret = "drill-hook-6c0e"

// postSigned posts body to acme's webhook entry signed under secret, with
// delivery ID id, and returns the status.
func postSigned(t *testing.T, base, body, secret, id string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/webhook/acme/issues", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, []byte(body)))
	req.Header.Set(webhook.DeliveryHeader, id)
	return send(req)
}

// TestDrillKill9AfterWebhook2xxKeepsTheEvent kills the daemon -9 right
// after the webhook package's request was answered 2xx: after the restart
// the Event is in the log and routed to its Work.
func TestDrillKill9AfterWebhook2xxKeepsTheEvent(t *testing.T) {
	iterations := scale(3, 50)
	e := daemontest.New(t, bins)
	e.WriteConfig(signedConfig)
	env := []string{"OC_TEST_HOOK=" + signedSecret}
	losses := 0
	for i := range iterations {
		e.Launch("", env, "--config", e.Config)
		base := "http://" + webhookAddr(e)
		if i > 0 {
			// What was acknowledged before the last kill is there, and routed.
			prev := fmt.Sprintf("d%d", i-1)
			if evs := eventsOf(t, e, "acme", "bad"+prev); len(evs) != 0 {
				t.Fatalf("iteration %d: a request refused 401 before the kill was accepted: %+v", i, evs)
			}
			evs := eventsOf(t, e, "acme", prev)
			if len(evs) != 1 {
				losses++
				t.Errorf("iteration %d: delivery %s was answered 2xx before the kill; the log holds it %d times", i, prev, len(evs))
			} else {
				waitRouted(t, e, evs[0].ID)
			}
		}
		body := fmt.Sprintf(`{"issue":{"id":%d,"title":"drill %d"}}`, i, i)
		// Negative control: a request signed with another secret is refused
		// and is not there after the restart either.
		if got := postSigned(t, base, body, "not-"+signedSecret, fmt.Sprintf("badd%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("iteration %d: a badly signed request: status %d, want 401", i, got)
		}
		if got := postSigned(t, base, body, signedSecret, fmt.Sprintf("d%d", i)); got != http.StatusAccepted {
			t.Fatalf("iteration %d: a signed request: status %d, want 202\n%s", i, got, e.Log)
		}
		e.Kill()
	}
	e.Launch("", env, "--config", e.Config)
	webhookAddr(e)
	last := eventsOf(t, e, "acme", fmt.Sprintf("d%d", iterations-1))
	if len(last) != 1 {
		t.Fatalf("the last delivery answered 2xx before the kill is there %d times, want once", len(last))
	}
	waitRouted(t, e, last[0].ID)
	works, err := e.C.Works(context.Background(), client.WorkQuery{Scope: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(works.Work) != iterations {
		t.Fatalf("%d keys acknowledged, %d Work after the kills: %+v", iterations, len(works.Work), works.Work)
	}
	report(t, "kill -9 right after a webhook 2xx: %d iterations, %d acknowledged Events lost, every one there routed", iterations, losses)
}
