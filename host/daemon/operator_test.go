package daemon_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// helloOnly is a config that uses only the bundled hello package, so a
// test can break the probe package without refusing the whole start.
const helloOnly = `{"scopes": [{"id": "beta", "entries": [{"name": "h1", "type": "hello"}]}]}`

// deadline is how long a test waits for something the daemon does in the
// background (a restart's backoff, a handshake) on a loaded machine.
const deadline = 60 * time.Second

// eventually polls cond until it holds or the deadline passes.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			e.t.Fatalf("%s did not happen within %s\n%s", what, deadline, e.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) writeConfig(text string) {
	e.t.Helper()
	if err := os.WriteFile(e.config, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// probeDir is the installed probe package's directory.
func (e *env) probeDir() string {
	return filepath.Join(filepath.Dir(e.config), "extensions", probe.Name)
}

// editProbeManifest rewrites the installed probe's manifest through edit.
func (e *env) editProbeManifest(edit func(m *protocol.Manifest)) {
	e.t.Helper()
	m := probe.Extension().Manifest
	edit(m)
	data, err := m.MarshalIndent()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.probeDir(), protocol.ManifestFile), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// serveFails runs serve expecting it to refuse the start, and returns
// what it printed.
func (e *env) serveFails(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(bins.openConduit, append([]string{"serve", "--state", e.state}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		e.t.Fatalf("serve %v should fail: %v\n%s", args, err, out)
	}
	return string(out)
}

func (e *env) status() client.Status {
	e.t.Helper()
	st, err := e.c.Status(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// TestOperatorCallIsAuthorizedBeforeTheHandlerRuns: a call in a scope that
// is not configured, or does not use the package, is refused before the
// handler runs, so its write is never made.
func TestOperatorCallIsAuthorizedBeforeTheHandlerRuns(t *testing.T) {
	e := newEnv(t)
	e.start()
	write := func(scope, key string) (client.CallResult, error) {
		return e.c.Call(context.Background(), probe.Name, client.CallRequest{Operation: "probe.call", Scope: scope, Input: map[string]any{
			"method": "kv.commit",
			"params": map[string]any{"puts": []map[string]any{{"namespace": "probe.data", "key": key, "value": "eA=="}}},
		}})
	}
	for _, scope := range []string{"nosuch", "beta"} {
		_, err := write(scope, "from-"+scope)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != protocol.CodeNotFound {
			t.Fatalf("a call in scope %q: %v", scope, err)
		}
		if _, found := e.kvGet("probe.data", "from-"+scope); found {
			t.Fatalf("the handler ran for a call in scope %q and committed its write", scope)
		}
	}
	if res, err := write("alpha", "from-alpha"); err != nil || res.Code != "" {
		t.Fatalf("negative control, a scope that uses probe: %+v %v", res, err)
	}
	if _, found := e.kvGet("probe.data", "from-alpha"); !found {
		t.Fatal("negative control: the call in alpha did not commit")
	}
}

// TestServeWithANamedConfigThatIsMissingFails: only the default location
// may fall back to the embedded default.
func TestServeWithANamedConfigThatIsMissingFails(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(t.TempDir(), "missing.json")
	out := e.serveFails("--config", missing)
	if !strings.Contains(out, missing) || strings.Contains(out, "serving") {
		t.Fatalf("the error does not name the missing file:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(missing), "extensions")); err == nil {
		t.Fatal("serve created an installed-packages folder beside a missing config")
	}
}

// TestServeOnTheDefaultLocationFallsBackToTheEmbeddedDefault is the
// negative control: with no --config and nothing at the default location,
// serve runs the embedded default.
func TestServeOnTheDefaultLocationFallsBackToTheEmbeddedDefault(t *testing.T) {
	e := newEnv(t)
	e.launch("", []string{"XDG_CONFIG_HOME=" + t.TempDir()})
	e.eventually("the daemon running", func() bool {
		st, err := e.c.Status(context.Background())
		return err == nil && st.Phase == client.PhaseRunning
	})
	if st := e.status(); st.Config != "embedded default" || st.Generation < 1 {
		t.Fatalf("status: %+v", st)
	}
}

// TestRelativePathsAreResolvedOnce: a relative --config and --state work,
// installed packages included, from the directory serve was started in.
func TestRelativePathsAreResolvedOnce(t *testing.T) {
	e := newEnv(t)
	root := filepath.Dir(filepath.Dir(e.config))
	// The env's own --state comes first; the relative one after it wins.
	e.launch(root, nil, "--state", "state", "--config", filepath.Join("config", "config.json"))
	e.eventually("the daemon running", func() bool {
		st, err := e.c.Status(context.Background())
		return err == nil && st.Phase == client.PhaseRunning
	})
	if x := e.extension(probe.Name); x.State != "running" {
		t.Fatalf("the installed probe under a relative --config: %+v", x)
	}
	if st := e.status(); st.ConfigFile != e.config || st.State != e.state {
		t.Fatalf("paths are not absolute: %+v", st)
	}
}

// TestServeRefusesWhatConfigCheckRefuses: one validation pipeline serves
// serve, check and apply, so a config a package's validate refuses does not
// start either.
func TestServeRefusesWhatConfigCheckRefuses(t *testing.T) {
	e := newEnv(t)
	e.writeConfig(strings.Replace(testConfig, `{"name": "h1", "type": "hello"}`, `{"name": "h1", "type": "hello", "config": {"colour": "red"}}`, 1))
	out := e.serveFails("--config", e.config)
	if !strings.Contains(out, "/scopes/1/entries/0/config") || !strings.Contains(out, "invalid_config") {
		t.Fatalf("serve did not refuse hello's invalid entry:\n%s", out)
	}
	check, err := exec.Command(bins.openConduit, "config", "check", "--config", e.config).CombinedOutput()
	if err == nil || !strings.Contains(string(check), "/scopes/1/entries/0/config") {
		t.Fatalf("config check should refuse the same: %v\n%s", err, check)
	}
	// A package that could not start leaves its types unknown: a config
	// using them is refused, naming the package.
	e.writeConfig(testConfig)
	e.editProbeManifest(func(m *protocol.Manifest) { m.Version = "9.9.9" })
	out = e.serveFails("--config", e.config)
	if !strings.Contains(out, probe.Name) || !strings.Contains(out, "extension_unavailable") {
		t.Fatalf("a config using a package that failed to start:\n%s", out)
	}
}

// TestConfigApplySurvivesARestart: what is applied is written where serve
// reads next, and keeps its generation; an identical apply changes nothing.
func TestConfigApplySurvivesARestart(t *testing.T) {
	e := newEnv(t)
	e.start()
	next := strings.Replace(testConfig, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)
	res, err := e.c.ApplyConfig(context.Background(), []byte(next))
	if err != nil || !res.Applied || res.File != e.config {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if data, err := os.ReadFile(e.config); err != nil || string(data) != next {
		t.Fatalf("the applied config is not in the config file: %v\n%s", err, data)
	}
	if st, err := os.Stat(e.config); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the config file's mode: %v %v", st.Mode(), err)
	}
	again, err := e.c.ApplyConfig(context.Background(), []byte(next))
	if err != nil || again.Applied || !again.Unchanged || again.Generation != res.Generation {
		t.Fatalf("an identical apply: %+v %v", again, err)
	}
	e.stop()
	e.start()
	st := e.status()
	if st.Generation != res.Generation || st.Config != e.config || st.Hash != res.Hash {
		t.Fatalf("after a restart: %+v, applied %+v", st, res)
	}
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" {
		t.Fatalf("the applied scope is gone after a restart: %+v", a)
	}
	doc, err := e.c.Doctor(context.Background())
	if err != nil || !hasCheck(doc, "config", "ok") || !strings.Contains(checkDetail(doc, "config"), e.config) {
		t.Fatalf("doctor does not say which file is live: %+v %v", doc, err)
	}
}

func checkDetail(d client.Doctor, name string) string {
	for _, c := range d.Checks {
		if c.Name == name {
			return c.Detail
		}
	}
	return ""
}

// TestReloadOnSIGHUP: SIGHUP re-reads the config file as config apply
// would.
func TestReloadOnSIGHUP(t *testing.T) {
	e := newEnv(t)
	e.start()
	gen := e.status().Generation
	e.writeConfig(strings.Replace(testConfig, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1))
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	e.eventually("the reloaded generation", func() bool { return e.status().Generation == gen+1 })
	if a := e.hostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" {
		t.Fatalf("after SIGHUP: %+v", a)
	}
}

// TestRestartRestartsOnlyThatPackage: extension restart hello gives hello
// a new process and leaves probe's alone.
func TestRestartRestartsOnlyThatPackage(t *testing.T) {
	e := newEnv(t)
	e.start()
	hello, prb := e.extension("hello"), e.extension(probe.Name)
	res, err := e.c.Restart(context.Background(), "hello", 30*time.Second)
	if err != nil || !res.Done || res.Extension.State != "running" || res.Extension.PID == hello.PID {
		t.Fatalf("restart: %+v %v (pid was %d)", res, err, hello.PID)
	}
	if alive(hello.PID) {
		t.Fatalf("the old hello process %d outlived its restart", hello.PID)
	}
	if got := e.extension(probe.Name); got.PID != prb.PID || got.State != "running" {
		t.Fatalf("probe was touched: %+v (pid was %d)", got, prb.PID)
	}
	if _, err := e.c.Restart(context.Background(), "nobody", 0); err == nil {
		t.Fatal("restarting an unknown package")
	}
}

// TestRescanFindsAPackageInstalledWhileServing: a package copied into the
// installed folder while serve runs appears after a rescan, and config
// apply rescans too.
func TestRescanFindsAPackageInstalledWhileServing(t *testing.T) {
	e := newEnv(t)
	hidden := filepath.Join(t.TempDir(), probe.Name)
	if err := os.Rename(e.probeDir(), hidden); err != nil {
		t.Fatal(err)
	}
	e.writeConfig(helloOnly)
	e.start()
	for _, x := range e.mustExtensions().Extensions {
		if x.Name == probe.Name {
			t.Fatalf("probe before it is installed: %+v", x)
		}
	}
	if err := os.Rename(hidden, e.probeDir()); err != nil {
		t.Fatal(err)
	}
	res, err := e.c.Rescan(context.Background())
	if err != nil || len(res.Added) != 1 || res.Added[0] != probe.Name {
		t.Fatalf("rescan: %+v %v", res, err)
	}
	e.eventually("probe running", func() bool { return e.extension(probe.Name).State == "running" })
	applied, err := e.c.ApplyConfig(context.Background(), []byte(testConfig))
	if err != nil || !applied.Applied {
		t.Fatalf("a config using the new package: %+v %v", applied, err)
	}
}

func (e *env) mustExtensions() client.Extensions {
	e.t.Helper()
	exts, err := e.c.Extensions(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return exts
}

// TestFirstStartFailureIsRetried: a package whose first start fails for a
// reason a restart can cure is retried with backoff, without a daemon
// restart.
func TestFirstStartFailureIsRetried(t *testing.T) {
	e := newEnv(t)
	dir := e.probeDir()
	if err := os.Rename(filepath.Join(dir, "probe-extension"), filepath.Join(dir, "probe-real")); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "ready")
	script := "#!/bin/sh\n[ -f " + flag + " ] || { echo 'not ready yet' >&2; exit 3; }\nexec ./probe-real \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "probe-extension"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeConfig(helloOnly)
	e.start()
	x := e.extension(probe.Name)
	if x.State == "running" || x.Code != protocol.CodeHandshakeFailed || x.Remedy == "" {
		t.Fatalf("a package that cannot start yet: %+v", x)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.eventually("probe running after its failed first start", func() bool { return e.extension(probe.Name).State == "running" })
}

// TestRefusalCodesReachListAndDoctor: each host-side refusal keeps its
// code in extension list and doctor, with the remedy.
func TestRefusalCodesReachListAndDoctor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *env)
		code  string
		state string
	}{
		{"manifest mismatch", func(e *env) { e.editProbeManifest(func(m *protocol.Manifest) { m.Version = "9.9.9" }) },
			protocol.CodeManifestMismatch, "refused"},
		{"kv downgrade", func(e *env) {
			db, err := pebblekv.Open(filepath.Join(e.state, "store"), nil)
			if err != nil {
				e.t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *pebblekv.Tx) error { return tx.SetKVLayoutVersion(probe.Name, 5) }); err != nil {
				e.t.Fatal(err)
			}
		}, protocol.CodeKVDowngrade, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.writeConfig(helloOnly)
			tc.setup(e)
			e.start()
			x := e.extension(probe.Name)
			if x.State != tc.state || x.Code != tc.code || x.Remedy == "" {
				t.Fatalf("extension list: %+v", x)
			}
			doc, err := e.c.Doctor(context.Background())
			if err != nil || doc.OK {
				t.Fatalf("doctor should fail: %+v %v", doc, err)
			}
			found := false
			for _, c := range doc.Checks {
				if c.Name == "extension probe" {
					found = c.Status == protocol.CheckFail && c.Code == tc.code && c.Remedy != ""
				}
			}
			if !found {
				t.Fatalf("doctor does not show %s with its remedy: %+v", tc.code, doc.Checks)
			}
		})
	}
	t.Run("incompatible protocol", func(t *testing.T) {
		e := newEnv(t)
		e.writeConfig(helloOnly)
		e.editProbeManifest(func(m *protocol.Manifest) { m.Protocol = []int{99} })
		e.start()
		exts := e.mustExtensions()
		if len(exts.Skipped) != 1 || exts.Skipped[0].Code != protocol.CodeIncompatibleProtocol {
			t.Fatalf("skipped: %+v", exts.Skipped)
		}
		doc, _ := e.c.Doctor(context.Background())
		if !hasCheck(doc, "discovery", protocol.CheckWarn) {
			t.Fatalf("doctor: %+v", doc.Checks)
		}
	})
}

// TestAPIAnswersWhileAPackageNeverAnswersInitialize: a package that hangs
// in its handshake holds neither the start nor an operator's restart.
func TestAPIAnswersWhileAPackageNeverAnswersInitialize(t *testing.T) {
	e := newEnv(t)
	mute := filepath.Join(filepath.Dir(e.config), "extensions", "mute")
	if err := os.MkdirAll(mute, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &protocol.Manifest{Protocol: protocol.Versions, Name: "mute", Version: "1.0.0", Command: []string{"mute-extension"}}
	data, err := m.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mute, protocol.ManifestFile), data, 0o644)
	os.WriteFile(filepath.Join(mute, "mute-extension"), []byte("#!/bin/sh\nwhile read -r line; do :; done\n"), 0o755)
	e.launch("", nil, "--config", e.config)
	// While mute holds its handshake, the API answers: the daemon is still
	// starting, and says so.
	e.eventually("the API answering", func() bool {
		_, err := e.c.Status(context.Background())
		return err == nil
	})
	if x := e.extension("mute"); x.State != "starting" {
		t.Fatalf("mute during its handshake: %+v", x)
	}
	if st := e.status(); st.Phase != client.PhaseStarting {
		t.Fatalf("status during the start: %+v", st)
	}
	var ce *client.Error
	if _, err := e.c.ApplyConfig(context.Background(), []byte(testConfig)); !errors.As(err, &ce) || ce.Code != protocol.CodeUnavailable {
		t.Fatalf("apply while starting: %v", err)
	}
	e.eventually("the daemon running", func() bool { return e.status().Phase == client.PhaseRunning })
	if x := e.extension("mute"); x.Code != protocol.CodeHandshakeFailed {
		t.Fatalf("mute after its handshake timed out: %+v", x)
	}
	// A restart of mute answers at once when asked not to wait; the API
	// keeps answering during its handshake.
	res, err := e.c.Restart(context.Background(), "mute", 0)
	if err != nil || res.Done {
		t.Fatalf("restart without waiting: %+v %v", res, err)
	}
	if x := e.extension(probe.Name); x.State != "running" {
		t.Fatalf("probe during mute's restart: %+v", x)
	}
}
