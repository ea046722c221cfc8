package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/protocol"
)

// bins are built once per test binary.
var bins struct {
	openConduit string
	probe       string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oc-daemon-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	bins.openConduit = filepath.Join(dir, "open-conduit")
	bins.probe = filepath.Join(dir, "probe-extension")
	if err := build(bins.openConduit, "github.com/open-conduit/open-conduit"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else if err := build(bins.probe, "github.com/open-conduit/open-conduit/fixtures/probe/cmd/probe-extension"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s (the tests need the go command): %w", pkg, err)
	}
	return nil
}

// testConfig has three scopes: alpha uses probe (an entry selecting secret
// s1, the connection api1), beta uses only hello, and delta names api1 only
// in a binding, with no probe entry.
const testConfig = `{
  "scopes": [
    {"id": "alpha",
     "entries": [{"name": "p1", "type": "probe", "connection": "api1", "secrets": ["s1"]}],
     "secret_refs": {"s1": "env:OC_TEST_S1", "s2": "env:OC_TEST_S2"},
     "connections": ["api1"]},
    {"id": "beta",
     "entries": [{"name": "h1", "type": "hello"}],
     "secret_refs": {"s3": "env:OC_TEST_S3"}},
    {"id": "delta",
     "bindings": [{"name": "b1", "connection": "api1"}],
     "connections": ["api1"]}
  ],
  "connections": [{"name": "api1", "type": "probe-api", "secret_refs": {"token": "env:OC_TEST_TOKEN"}}]
}`

// env is one daemon's directories, with the probe package installed.
type env struct {
	t      *testing.T
	config string
	state  string
	cmd    *exec.Cmd
	log    *syncBuffer
	c      *client.Client
}

// syncBuffer is the daemon's output, written by the process's copier and
// read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, config: filepath.Join(root, "config", "config.json"), state: filepath.Join(root, "state")}
	pkg := filepath.Join(root, "config", "extensions", probe.Name)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bins.probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "probe-extension"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := probe.Extension().Manifest.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, protocol.ManifestFile), m, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	e.c = client.New(e.state)
	t.Cleanup(func() { e.kill() })
	return e
}

// start runs serve and waits until the daemon runs its configuration.
func (e *env) start() {
	e.t.Helper()
	e.launch("", nil, "--config", e.config)
	e.eventually("the daemon running its configuration", func() bool {
		st, err := e.c.Status(context.Background())
		return err == nil && st.PID == e.cmd.Process.Pid && st.Phase == client.PhaseRunning
	})
}

// launch runs serve on the env's state in dir (the test's own directory
// when empty), with the secrets testConfig refers to and env added to the
// environment, and does not wait.
func (e *env) launch(dir string, env []string, args ...string) {
	e.t.Helper()
	e.log = &syncBuffer{}
	e.cmd = exec.Command(bins.openConduit, append([]string{"serve", "--state", e.state}, args...)...)
	e.cmd.Dir = dir
	e.cmd.Env = append(append(os.Environ(), "OC_TEST_S1=one-7f3a", "OC_TEST_S2=two-9c1e", "OC_TEST_S3=three-4b2d", "OC_TEST_TOKEN=tok-5e8f"), env...)
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
}

// stop ends the daemon gracefully.
func (e *env) stop() {
	e.t.Helper()
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	if err := e.cmd.Wait(); err != nil {
		e.t.Fatalf("serve exited with %v\n%s", err, e.log)
	}
	e.cmd = nil
}

// kill ends the daemon as a crash does.
func (e *env) kill() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	e.cmd = nil
}

// hostCall has the probe call a host method through the daemon.
func (e *env) hostCall(scope, method string, params any) probe.Answer {
	e.t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		e.t.Fatal(err)
	}
	var in map[string]any
	_ = json.Unmarshal(fmt.Appendf(nil, `{"method":%q,"params":%s}`, method, raw), &in)
	res, err := e.c.Call(context.Background(), probe.Name, client.CallRequest{Operation: "probe.call", Scope: scope, Input: in})
	if err != nil {
		e.t.Fatalf("%s: %v\n%s", method, err, e.log)
	}
	if res.Code != "" {
		e.t.Fatalf("probe.call %s refused %s: %s", method, res.Code, res.Message)
	}
	var a probe.Answer
	if err := json.Unmarshal(res.Output.Data, &a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) kvGet(ns, key string) (string, bool) {
	e.t.Helper()
	a := e.hostCall("", "kv.get", protocol.KVGetParams{Namespace: ns, Key: key})
	if a.Code != "" {
		e.t.Fatalf("kv.get: %s %s", a.Code, a.Message)
	}
	var r protocol.KVGetResult
	if err := json.Unmarshal(a.Result, &r); err != nil {
		e.t.Fatal(err)
	}
	return string(r.Value), r.Found
}

func (e *env) extension(name string) client.Extension {
	e.t.Helper()
	exts, err := e.c.Extensions(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range exts.Extensions {
		if x.Name == name {
			return x
		}
	}
	e.t.Fatalf("no extension %s in %+v", name, exts)
	return client.Extension{}
}

func TestServeRunsPackagePersistsKVAndDoctorIsHealthy(t *testing.T) {
	e := newEnv(t)
	e.start()
	x := e.extension(probe.Name)
	if x.State != "running" || x.Source != "installed" || x.PID == 0 || x.Protocol != 1 {
		t.Fatalf("probe %+v", x)
	}
	if h := e.extension("hello"); h.State != "running" || h.Source != "bundled" {
		t.Fatalf("hello %+v", h)
	}
	commit := e.hostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.data", Key: "k", Value: []byte("v1")}}})
	if commit.Code != "" {
		t.Fatalf("kv.commit: %s", commit.Message)
	}
	doc, err := e.c.Doctor(context.Background())
	if err != nil || !doc.OK {
		t.Fatalf("doctor: %+v %v", doc, err)
	}
	if !hasCheck(doc, "probe-ready", "ok") || !hasCheck(doc, "extension probe", "ok") {
		t.Fatalf("doctor lacks the probe's checks: %+v", doc.Checks)
	}

	e.stop()
	if _, err := e.c.Status(context.Background()); !errors.Is(err, client.ErrNoDaemon) {
		t.Fatalf("after stop: %v", err)
	}
	if alive(x.PID) {
		t.Fatalf("the extension (pid %d) outlived the daemon", x.PID)
	}
	e.start()
	if v, ok := e.kvGet("probe.data", "k"); !ok || v != "v1" {
		t.Fatalf("after a restart kv.get = %q %v", v, ok)
	}
	doc, err = e.c.Doctor(context.Background())
	if err != nil || !doc.OK {
		t.Fatalf("doctor after restart: %+v %v", doc, err)
	}
}

func hasCheck(d client.Doctor, name, status string) bool {
	for _, c := range d.Checks {
		if c.Name == name && c.Status == status {
			return true
		}
	}
	return false
}

func alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return syscall.Kill(pid, 0) == nil
}

func TestScopingThroughTheDaemon(t *testing.T) {
	e := newEnv(t)
	e.start()

	// KV: a batch touching a foreign namespace applies nothing.
	bad := e.hostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{
		{Namespace: "probe.data", Key: "mixed", Value: []byte("x")},
		{Namespace: "hello.greetings", Key: "intruder", Value: []byte("x")},
	}})
	if bad.Code != protocol.CodeUnauthorized {
		t.Fatalf("foreign namespace: %+v", bad)
	}
	if _, ok := e.kvGet("probe.data", "mixed"); ok {
		t.Fatal("a batch with a foreign write applied its own write")
	}
	good := e.hostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.data", Key: "mixed", Value: []byte("x")}}})
	if good.Code != "" {
		t.Fatalf("negative control: %+v", good)
	}

	// State: a scope outside the extension's reads as not found.
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "beta"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("state.scope beta: %+v", a)
	}
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "alpha"}); a.Code != "" || !strings.Contains(string(a.Result), `"p1"`) {
		t.Fatalf("negative control state.scope alpha: %+v", a)
	}
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "nonexistent"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("state.scope nonexistent: %+v", a)
	}
	// An Event of beta (hello's greeting) is not found for the probe; its
	// own Event in alpha is.
	res, err := e.c.Call(context.Background(), "hello", client.CallRequest{Operation: "hello.greet", Scope: "beta", Input: map[string]any{"name": "ada"}})
	if err != nil || res.Code != "" {
		t.Fatalf("hello.greet: %+v %v", res, err)
	}
	own := e.hostCall("", "kv.commit", protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "d1", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	if own.Code != "" {
		t.Fatalf("emission: %+v", own)
	}
	evs, err := e.c.Events(context.Background(), client.EventsQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, ev := range evs.Events {
		ids[ev.Type] = ev.ID
	}
	if a := e.hostCall("", "state.event", protocol.StateEventParams{ID: ids["hello.greeted"]}); a.Code != protocol.CodeNotFound {
		t.Fatalf("another scope's event: %+v", a)
	}
	if a := e.hostCall("", "state.event", protocol.StateEventParams{ID: ids["probe.seen"]}); a.Code != "" {
		t.Fatalf("negative control, own event: %+v", a)
	}
	page := e.hostCall("", "state.events", protocol.StateEventsParams{})
	if strings.Contains(string(page.Result), "hello.greeted") || !strings.Contains(string(page.Result), "probe.seen") {
		t.Fatalf("state.events leaks or misses: %s", page.Result)
	}

	// Permissions: a gated method the manifest does not ask for.
	if a := e.hostCall("alpha", "telemetry.capture", map[string]any{"name": "x"}); a.Code != protocol.CodeUndeclared {
		t.Fatalf("telemetry.capture: %+v", a)
	}

	// Secrets: only what the probe's own entries select.
	sec := func(p protocol.SecretResolveParams) probe.Answer { return e.hostCall("", "secret.resolve", p) }
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
	logs := e.log.String()
	if data, err := os.ReadFile(filepath.Join(e.state, "logs", "extensions", "probe.log")); err == nil {
		logs += string(data)
	}
	for _, v := range []string{"one-7f3a", "two-9c1e", "three-4b2d", "tok-5e8f"} {
		if strings.Contains(logs, v) {
			t.Fatalf("the secret value %q reached a log", v)
		}
	}
}

// TestDurabilityAfterKill9 kills the daemon right after a kv.commit and an
// event.accept were answered, and checks on restart that both are there.
func TestDurabilityAfterKill9(t *testing.T) {
	iterations := 50
	if testing.Short() {
		iterations = 5
	}
	e := newEnv(t)
	e.start()
	root := e.hostCall("", "kv.commit", protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "root", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	var rootRes protocol.KVCommitResult
	if root.Code != "" || json.Unmarshal(root.Result, &rootRes) != nil || len(rootRes.Emissions) != 1 {
		t.Fatalf("root: %+v", root)
	}
	parent := rootRes.Emissions[0].EventID
	losses := 0
	for i := 0; i < iterations; i++ {
		key := fmt.Sprintf("k%03d", i)
		if a := e.hostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.dur", Key: key, Value: []byte(key)}}}); a.Code != "" {
			t.Fatalf("commit %d: %+v", i, a)
		}
		acc := e.hostCall("", "event.accept", protocol.EventAcceptParams{
			Scope: "alpha", Source: "probe", DeliveryID: "derived-" + key, Type: "probe.seen", Parent: parent,
			Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
			Records: &protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.rec", Key: key, Value: []byte("r")}}},
		})
		var accRes protocol.EventAcceptResult
		if acc.Code != "" || json.Unmarshal(acc.Result, &accRes) != nil || !accRes.Added {
			t.Fatalf("accept %d: %+v", i, acc)
		}
		e.kill()
		e.start()
		if v, ok := e.kvGet("probe.dur", key); !ok || v != key {
			losses++
			t.Errorf("iteration %d: the acknowledged kv.commit is gone", i)
		}
		if _, ok := e.kvGet("probe.rec", key); !ok {
			losses++
			t.Errorf("iteration %d: the acknowledged event.accept's record is gone", i)
		}
		if a := e.hostCall("", "state.event", protocol.StateEventParams{ID: accRes.Event.ID}); a.Code != "" {
			losses++
			t.Errorf("iteration %d: the acknowledged event is gone: %+v", i, a)
		}
	}
	t.Logf("%d iterations, %d losses", iterations, losses)
}

// TestConfigApplyReconfiguresWithoutRestart applies a config with a new
// scope: the probe is configured again (it now reads the new scope), keeps
// its pid, and a config with errors changes nothing.
func TestConfigApplyReconfiguresWithoutRestart(t *testing.T) {
	e := newEnv(t)
	e.start()
	pid := e.extension(probe.Name).PID
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != protocol.CodeNotFound {
		t.Fatalf("before apply: %+v", a)
	}
	next := strings.Replace(testConfig, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)
	bad := strings.Replace(next, `"type": "probe"}]},`, `"type": "nope"}]},`, 1)
	res, err := e.c.ApplyConfig(context.Background(), []byte(bad))
	if err != nil || res.Applied || len(res.Problems) == 0 || res.Problems[0].Path != "/scopes/0/entries/0/type" {
		t.Fatalf("a bad config: %+v %v", res, err)
	}
	// hello, running, checks its own entries: a config it refuses is not
	// applied either.
	refused := strings.Replace(next, `{"name": "h1", "type": "hello"}`, `{"name": "h1", "type": "hello", "config": {"colour": "red"}}`, 1)
	res, err = e.c.ApplyConfig(context.Background(), []byte(refused))
	if err != nil || res.Applied || len(res.Problems) != 1 || res.Problems[0].Path != "/scopes/2/entries/0/config" || res.Problems[0].Code != "invalid_config" {
		t.Fatalf("a config hello refuses: %+v %v", res, err)
	}
	st, _ := e.c.Status(context.Background())
	res, err = e.c.ApplyConfig(context.Background(), []byte(next))
	if err != nil || !res.Applied || res.Generation != st.Generation+1 || len(res.Refused) != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" || !strings.Contains(string(a.Result), `"p2"`) {
		t.Fatalf("after apply: %+v", a)
	}
	if got := e.extension(probe.Name); got.PID != pid || got.Restarts != 0 {
		t.Fatalf("the probe was restarted: %+v (pid was %d)", got, pid)
	}
	log, err := e.c.Logs(context.Background(), probe.Name, 20)
	if err != nil || len(log.Lines) == 0 || !strings.Contains(strings.Join(log.Lines, "\n"), "started") {
		t.Fatalf("logs: %+v %v", log, err)
	}
	if _, err := e.c.Logs(context.Background(), "nobody", 5); err == nil {
		t.Fatal("logs of an unknown extension")
	}
}
