package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// bins are built once per test binary.
var bins daemontest.Bins

func TestMain(m *testing.M) { os.Exit(daemontest.Main(m, &bins)) }

func TestServeRunsPackagePersistsKVAndDoctorIsHealthy(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	x := e.Extension(probe.Name)
	if x.State != "running" || x.Source != "installed" || x.PID == 0 || x.Protocol != 1 {
		t.Fatalf("probe %+v", x)
	}
	if h := e.Extension("hello"); h.State != "running" || h.Source != "bundled" {
		t.Fatalf("hello %+v", h)
	}
	commit := e.HostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.data", Key: "k", Value: []byte("v1")}}})
	if commit.Code != "" {
		t.Fatalf("kv.commit: %s", commit.Message)
	}
	doc, err := e.C.Doctor(context.Background())
	if err != nil || !doc.OK {
		t.Fatalf("doctor: %+v %v", doc, err)
	}
	if !daemontest.HasCheck(doc, "probe-ready", "ok") || !daemontest.HasCheck(doc, "extension probe", "ok") {
		t.Fatalf("doctor lacks the probe's checks: %+v", doc.Checks)
	}
	// The check ran on the probe's view of the live configuration: its
	// scopes, its entry and its connection, not hello's scope.
	if d := daemontest.CheckDetail(doc, "probe-ready"); !strings.HasSuffix(d, "; config: alpha, alpha/p1, delta, connection api1") {
		t.Fatalf("the probe's check saw the configuration as %q", d)
	}

	e.Stop()
	if _, err := e.C.Status(context.Background()); !errors.Is(err, client.ErrNoDaemon) {
		t.Fatalf("after stop: %v", err)
	}
	if daemontest.Alive(x.PID) {
		t.Fatalf("the extension (pid %d) outlived the daemon", x.PID)
	}
	e.Start()
	if v, ok := e.KVGet("probe.data", "k"); !ok || v != "v1" {
		t.Fatalf("after a restart kv.get = %q %v", v, ok)
	}
	doc, err = e.C.Doctor(context.Background())
	if err != nil || !doc.OK {
		t.Fatalf("doctor after restart: %+v %v", doc, err)
	}
}

func TestScopingThroughTheDaemon(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()

	// KV: a batch touching a foreign namespace applies nothing.
	bad := e.HostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{
		{Namespace: "probe.data", Key: "mixed", Value: []byte("x")},
		{Namespace: "hello.greetings", Key: "intruder", Value: []byte("x")},
	}})
	if bad.Code != protocol.CodeUnauthorized {
		t.Fatalf("foreign namespace: %+v", bad)
	}
	if _, ok := e.KVGet("probe.data", "mixed"); ok {
		t.Fatal("a batch with a foreign write applied its own write")
	}
	good := e.HostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.data", Key: "mixed", Value: []byte("x")}}})
	if good.Code != "" {
		t.Fatalf("negative control: %+v", good)
	}

	// State: a scope outside the extension's reads as not found.
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "beta"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("state.scope beta: %+v", a)
	}
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "alpha"}); a.Code != "" || !strings.Contains(string(a.Result), `"p1"`) {
		t.Fatalf("negative control state.scope alpha: %+v", a)
	}
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "nonexistent"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("state.scope nonexistent: %+v", a)
	}
	// An Event of beta (hello's greeting) is not found for the probe; its
	// own Event in alpha is.
	res, err := e.C.Call(context.Background(), "hello", client.CallRequest{Operation: "hello.greet", Scope: "beta", Input: map[string]any{"name": "ada"}})
	if err != nil || res.Code != "" {
		t.Fatalf("hello.greet: %+v %v", res, err)
	}
	own := e.HostCall("", "kv.commit", protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "d1", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	if own.Code != "" {
		t.Fatalf("emission: %+v", own)
	}
	evs, err := e.C.Events(context.Background(), client.EventsQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, ev := range evs.Events {
		ids[ev.Type] = ev.ID
	}
	if a := e.HostCall("", "state.event", protocol.StateEventParams{ID: ids["hello.greeted"]}); a.Code != protocol.CodeNotFound {
		t.Fatalf("another scope's event: %+v", a)
	}
	if a := e.HostCall("", "state.event", protocol.StateEventParams{ID: ids["probe.seen"]}); a.Code != "" {
		t.Fatalf("negative control, own event: %+v", a)
	}
	page := e.HostCall("", "state.events", protocol.StateEventsParams{})
	if strings.Contains(string(page.Result), "hello.greeted") || !strings.Contains(string(page.Result), "probe.seen") {
		t.Fatalf("state.events leaks or misses: %s", page.Result)
	}

	// Permissions: a gated method the manifest does not ask for.
	if a := e.HostCall("alpha", "telemetry.capture", map[string]any{"name": "x"}); a.Code != protocol.CodeUndeclared {
		t.Fatalf("telemetry.capture: %+v", a)
	}

	// Secrets: only what the probe's own entries select.
	sec := func(p protocol.SecretResolveParams) probe.Answer { return e.HostCall("", "secret.resolve", p) }
	if a := sec(protocol.SecretResolveParams{Scope: "alpha", Names: []string{"s1"}}); a.Code != "" || !strings.Contains(string(a.Result), `"s1":"one-7f3a"`) {
		t.Fatalf("own secret: %+v", a)
	}
	if a := sec(protocol.SecretResolveParams{Scope: "alpha", Names: []string{"s2"}}); a.Code != protocol.CodeUnauthorized || strings.Contains(a.Message, "two-9c1e") {
		t.Fatalf("a secret no entry of its selects: %+v", a)
	}
	if a := sec(protocol.SecretResolveParams{Scope: "beta", Names: []string{"s3"}}); a.Code != protocol.CodeUnauthorized || strings.Contains(a.Message, "three-4b2d") {
		t.Fatalf("another scope's secret: %+v", a)
	}
	if a := sec(protocol.SecretResolveParams{Scope: "alpha", Connection: "api1"}); a.Code != "" || !strings.Contains(string(a.Result), `"token":"tok-5e8f"`) {
		t.Fatalf("its entry's connection: %+v", a)
	}
	// A connection a binding names is the package's only in a scope with
	// one of its entries; delta has none.
	if a := sec(protocol.SecretResolveParams{Scope: "delta", Connection: "api1"}); a.Code != protocol.CodeUnauthorized || strings.Contains(a.Message, "tok-5e8f") {
		t.Fatalf("a binding's connection in a scope without an entry: %+v", a)
	}
	logs := e.Log.String()
	if data, err := os.ReadFile(filepath.Join(e.State, "logs", "extensions", "probe.log")); err == nil {
		logs += string(data)
	}
	for _, v := range []string{"one-7f3a", "two-9c1e", "three-4b2d", "tok-5e8f"} {
		if strings.Contains(logs, v) {
			t.Fatalf("the secret value %q reached a log", v)
		}
	}
}

// TestConfigApplyReconfiguresWithoutRestart applies a config with a new
// scope: the probe is configured again (it now reads the new scope), keeps
// its pid, and a config with errors changes nothing.
func TestConfigApplyReconfiguresWithoutRestart(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	pid := e.Extension(probe.Name).PID
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("before apply: %+v", a)
	}
	next := strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)
	bad := strings.Replace(next, `"type": "probe"}]},`, `"type": "nope"}]},`, 1)
	res, err := e.C.ApplyConfig(context.Background(), []byte(bad))
	if err != nil || res.Applied || len(res.Problems) == 0 || res.Problems[0].Path != "/scopes/0/entries/0/type" {
		t.Fatalf("a bad config: %+v %v", res, err)
	}
	// hello, running, checks its own entries: a config it refuses is not
	// applied either.
	refused := strings.Replace(next, `{"name": "h1", "type": "hello"}`, `{"name": "h1", "type": "hello", "config": {"colour": "red"}}`, 1)
	res, err = e.C.ApplyConfig(context.Background(), []byte(refused))
	if err != nil || res.Applied || len(res.Problems) != 1 || res.Problems[0].Path != "/scopes/2/entries/0/config" || res.Problems[0].Code != "invalid_config" {
		t.Fatalf("a config hello refuses: %+v %v", res, err)
	}
	st, _ := e.C.Status(context.Background())
	res, err = e.C.ApplyConfig(context.Background(), []byte(next))
	if err != nil || !res.Applied || res.Generation != st.Generation+1 || len(res.Refused) != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" || !strings.Contains(string(a.Result), `"p2"`) {
		t.Fatalf("after apply: %+v", a)
	}
	if got := e.Extension(probe.Name); got.PID != pid || got.Restarts != 0 {
		t.Fatalf("the probe was restarted: %+v (pid was %d)", got, pid)
	}
	log, err := e.C.Logs(context.Background(), probe.Name, 20)
	if err != nil || len(log.Lines) == 0 || !strings.Contains(strings.Join(log.Lines, "\n"), "started") {
		t.Fatalf("logs: %+v %v", log, err)
	}
	if _, err := e.C.Logs(context.Background(), "nobody", 5); err == nil {
		t.Fatal("logs of an unknown extension")
	}
}
