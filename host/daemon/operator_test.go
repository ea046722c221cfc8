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
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestOperatorCallIsAuthorizedBeforeTheHandlerRuns: a call in a scope that
// is not configured, or does not use the package, is refused before the
// handler runs, so its write is never made.
func TestOperatorCallIsAuthorizedBeforeTheHandlerRuns(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	write := func(scope, key string) (client.CallResult, error) {
		return e.C.Call(context.Background(), probe.Name, client.CallRequest{Operation: "probe.call", Scope: scope, Input: map[string]any{
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
		if _, found := e.KVGet("probe.data", "from-"+scope); found {
			t.Fatalf("the handler ran for a call in scope %q and committed its write", scope)
		}
	}
	if res, err := write("alpha", "from-alpha"); err != nil || res.Code != "" {
		t.Fatalf("negative control, a scope that uses probe: %+v %v", res, err)
	}
	if _, found := e.KVGet("probe.data", "from-alpha"); !found {
		t.Fatal("negative control: the call in alpha did not commit")
	}
}

// TestServeWithANamedConfigThatIsMissingFails: only the default location
// may fall back to the embedded default.
func TestServeWithANamedConfigThatIsMissingFails(t *testing.T) {
	e := daemontest.New(t, bins)
	missing := filepath.Join(t.TempDir(), "missing.json")
	out := e.ServeFails("--config", missing)
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
	e := daemontest.New(t, bins)
	e.Launch("", []string{"XDG_CONFIG_HOME=" + t.TempDir()})
	e.Eventually("the daemon running", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.Phase == client.PhaseRunning
	})
	if st := e.Status(); st.Config != "embedded default" || st.Generation < 1 {
		t.Fatalf("status: %+v", st)
	}
}

// TestRelativePathsAreResolvedOnce: a relative --config and --state work,
// installed packages included, from the directory serve was started in.
func TestRelativePathsAreResolvedOnce(t *testing.T) {
	e := daemontest.New(t, bins)
	root := filepath.Dir(filepath.Dir(e.Config))
	// The env's own --state comes first; the relative one after it wins.
	e.Launch(root, nil, "--state", "state", "--config", filepath.Join("config", "config.json"))
	e.Eventually("the daemon running", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.Phase == client.PhaseRunning
	})
	if x := e.Extension(probe.Name); x.State != "running" {
		t.Fatalf("the installed probe under a relative --config: %+v", x)
	}
	if st := e.Status(); st.ConfigFile != e.Config || st.State != e.State {
		t.Fatalf("paths are not absolute: %+v", st)
	}
}

// TestServeRefusesWhatConfigCheckRefuses: one validation pipeline serves
// serve, check and apply, so a config a package's validate refuses does not
// start either.
func TestServeRefusesWhatConfigCheckRefuses(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(strings.Replace(daemontest.Config, `{"name": "h1", "type": "hello"}`, `{"name": "h1", "type": "hello", "config": {"colour": "red"}}`, 1))
	out := e.ServeFails("--config", e.Config)
	if !strings.Contains(out, "/scopes/1/entries/0/config") || !strings.Contains(out, "invalid_config") {
		t.Fatalf("serve did not refuse hello's invalid entry:\n%s", out)
	}
	check, err := exec.Command(bins.OpenConduit, "config", "check", "--config", e.Config).CombinedOutput()
	if err == nil || !strings.Contains(string(check), "/scopes/1/entries/0/config") {
		t.Fatalf("config check should refuse the same: %v\n%s", err, check)
	}
	// A package that could not start leaves its types unknown: a config
	// using them is refused, naming the package.
	e.WriteConfig(daemontest.Config)
	e.EditProbeManifest(func(m *protocol.Manifest) { m.Version = "9.9.9" })
	out = e.ServeFails("--config", e.Config)
	if !strings.Contains(out, probe.Name) || !strings.Contains(out, "extension_unavailable") {
		t.Fatalf("a config using a package that failed to start:\n%s", out)
	}
}

// TestConfigApplySurvivesARestart: what is applied is written where serve
// reads next, and keeps its generation; an identical apply changes nothing.
func TestConfigApplySurvivesARestart(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	next := strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)
	res, err := e.C.ApplyConfig(context.Background(), []byte(next))
	if err != nil || !res.Applied || res.File != e.Config {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if data, err := os.ReadFile(e.Config); err != nil || string(data) != next {
		t.Fatalf("the applied config is not in the config file: %v\n%s", err, data)
	}
	if st, err := os.Stat(e.Config); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the config file's mode: %v %v", st.Mode(), err)
	}
	again, err := e.C.ApplyConfig(context.Background(), []byte(next))
	if err != nil || again.Applied || !again.Unchanged || again.Generation != res.Generation {
		t.Fatalf("an identical apply: %+v %v", again, err)
	}
	e.Stop()
	e.Start()
	st := e.Status()
	if st.Generation != res.Generation || st.Config != e.Config || st.Hash != res.Hash {
		t.Fatalf("after a restart: %+v, applied %+v", st, res)
	}
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" {
		t.Fatalf("the applied scope is gone after a restart: %+v", a)
	}
	doc, err := e.C.Doctor(context.Background())
	if err != nil || !daemontest.HasCheck(doc, "config", "ok") || !strings.Contains(daemontest.CheckDetail(doc, "config"), e.Config) {
		t.Fatalf("doctor does not say which file is live: %+v %v", doc, err)
	}
}

// TestReloadOnSIGHUP: SIGHUP re-reads the config file as config apply
// would.
func TestReloadOnSIGHUP(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	gen := e.Status().Generation
	e.WriteConfig(strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1))
	if err := e.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the reloaded generation", func() bool { return e.Status().Generation == gen+1 })
	if a := e.HostCall("", "state.scope", protocol.StateScopeParams{ID: "gamma"}); a.Code != "" {
		t.Fatalf("after SIGHUP: %+v", a)
	}
}

// TestRestartRestartsOnlyThatPackage: extension restart hello gives hello
// a new process and leaves probe's alone.
func TestRestartRestartsOnlyThatPackage(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	hello, prb := e.Extension("hello"), e.Extension(probe.Name)
	res, err := e.C.Restart(context.Background(), "hello", 30*time.Second)
	if err != nil || !res.Done || res.Extension.State != "running" || res.Extension.PID == hello.PID {
		t.Fatalf("restart: %+v %v (pid was %d)", res, err, hello.PID)
	}
	if daemontest.Alive(hello.PID) {
		t.Fatalf("the old hello process %d outlived its restart", hello.PID)
	}
	if got := e.Extension(probe.Name); got.PID != prb.PID || got.State != "running" {
		t.Fatalf("probe was touched: %+v (pid was %d)", got, prb.PID)
	}
	if _, err := e.C.Restart(context.Background(), "nobody", 0); err == nil {
		t.Fatal("restarting an unknown package")
	}
}

// TestRescanFindsAPackageInstalledWhileServing: a package copied into the
// installed folder while serve runs appears after a rescan, and config
// apply rescans too.
func TestRescanFindsAPackageInstalledWhileServing(t *testing.T) {
	e := daemontest.New(t, bins)
	hidden := filepath.Join(t.TempDir(), probe.Name)
	if err := os.Rename(e.ProbeDir(), hidden); err != nil {
		t.Fatal(err)
	}
	e.WriteConfig(daemontest.HelloOnly)
	e.Start()
	for _, x := range e.Extensions().Extensions {
		if x.Name == probe.Name {
			t.Fatalf("probe before it is installed: %+v", x)
		}
	}
	if err := os.Rename(hidden, e.ProbeDir()); err != nil {
		t.Fatal(err)
	}
	res, err := e.C.Rescan(context.Background())
	if err != nil || len(res.Added) != 1 || res.Added[0] != probe.Name {
		t.Fatalf("rescan: %+v %v", res, err)
	}
	e.Eventually("probe running", func() bool { return e.Extension(probe.Name).State == "running" })
	applied, err := e.C.ApplyConfig(context.Background(), []byte(daemontest.Config))
	if err != nil || !applied.Applied {
		t.Fatalf("a config using the new package: %+v %v", applied, err)
	}
}

// TestRescanStopsAPackageRemovedWhileServing: a package whose directory is
// removed while the daemon serves is stopped at the next rescan and leaves
// the set, so its process is gone and a reinstall starts it afresh; the
// other packages keep running.
func TestRescanStopsAPackageRemovedWhileServing(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(daemontest.HelloOnly)
	e.Start()
	e.Eventually("probe running", func() bool { return e.Extension(probe.Name).State == "running" })
	pid := e.Extension(probe.Name).PID
	hidden := filepath.Join(t.TempDir(), probe.Name)
	if err := os.Rename(e.ProbeDir(), hidden); err != nil {
		t.Fatal(err)
	}
	res, err := e.C.Rescan(context.Background())
	if err != nil || len(res.Removed) != 1 || res.Removed[0] != probe.Name {
		t.Fatalf("rescan after removal: %+v %v", res, err)
	}
	for _, x := range e.Extensions().Extensions {
		if x.Name == probe.Name {
			t.Fatalf("a removed package is still listed: %+v", x)
		}
	}
	e.Eventually("the removed package's process gone", func() bool { return syscall.Kill(pid, 0) != nil })
	if x := e.Extension("hello"); x.State != "running" {
		t.Fatalf("hello after another package's removal: %+v", x)
	}
	if err := os.Rename(hidden, e.ProbeDir()); err != nil {
		t.Fatal(err)
	}
	res, err = e.C.Rescan(context.Background())
	if err != nil || len(res.Added) != 1 || res.Added[0] != probe.Name {
		t.Fatalf("rescan after reinstall: %+v %v", res, err)
	}
	e.Eventually("the reinstalled package running", func() bool { return e.Extension(probe.Name).State == "running" })
}

// TestFirstStartFailureIsRetried: a package whose first start fails for a
// reason a restart can cure is retried with backoff, without a daemon
// restart.
func TestFirstStartFailureIsRetried(t *testing.T) {
	e := daemontest.New(t, bins)
	dir := e.ProbeDir()
	if err := os.Rename(filepath.Join(dir, "probe-extension"), filepath.Join(dir, "probe-real")); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "ready")
	script := "#!/bin/sh\n[ -f " + flag + " ] || { echo 'not ready yet' >&2; exit 3; }\nexec ./probe-real \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "probe-extension"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.WriteConfig(daemontest.HelloOnly)
	e.Start()
	x := e.Extension(probe.Name)
	if x.State == "running" || x.Code != protocol.CodeHandshakeFailed || x.Remedy == "" {
		t.Fatalf("a package that cannot start yet: %+v", x)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Eventually("probe running after its failed first start", func() bool { return e.Extension(probe.Name).State == "running" })
}

// TestRefusalCodesReachListAndDoctor: each host-side refusal keeps its
// code in extension list and doctor, with the remedy.
func TestRefusalCodesReachListAndDoctor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *daemontest.Env)
		code  string
		state string
	}{
		{"manifest mismatch", func(e *daemontest.Env) { e.EditProbeManifest(func(m *protocol.Manifest) { m.Version = "9.9.9" }) },
			protocol.CodeManifestMismatch, "refused"},
		{"kv downgrade", func(e *daemontest.Env) {
			db, err := pebblekv.Open(filepath.Join(e.State, "store"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *pebblekv.Tx) error { return tx.SetKVLayoutVersion(probe.Name, 5) }); err != nil {
				t.Fatal(err)
			}
		}, protocol.CodeKVDowngrade, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			e.WriteConfig(daemontest.HelloOnly)
			tc.setup(e)
			e.Start()
			x := e.Extension(probe.Name)
			if x.State != tc.state || x.Code != tc.code || x.Remedy == "" {
				t.Fatalf("extension list: %+v", x)
			}
			doc, err := e.C.Doctor(context.Background())
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
		e := daemontest.New(t, bins)
		e.WriteConfig(daemontest.HelloOnly)
		e.EditProbeManifest(func(m *protocol.Manifest) { m.Protocol = []int{99} })
		e.Start()
		exts := e.Extensions()
		if len(exts.Skipped) != 1 || exts.Skipped[0].Code != protocol.CodeIncompatibleProtocol {
			t.Fatalf("skipped: %+v", exts.Skipped)
		}
		doc, _ := e.C.Doctor(context.Background())
		if !daemontest.HasCheck(doc, "discovery", protocol.CheckWarn) {
			t.Fatalf("doctor: %+v", doc.Checks)
		}
	})
}

// TestAPIAnswersWhileAPackageNeverAnswersInitialize: a package that hangs
// in its handshake holds neither the start nor an operator's restart.
func TestAPIAnswersWhileAPackageNeverAnswersInitialize(t *testing.T) {
	e := daemontest.New(t, bins)
	mute := filepath.Join(filepath.Dir(e.Config), "extensions", "mute")
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
	e.Launch("", nil, "--config", e.Config)
	// While mute holds its handshake, the API answers: the daemon is still
	// starting, and says so.
	e.Eventually("the API answering", func() bool {
		_, err := e.C.Status(context.Background())
		return err == nil
	})
	if x := e.Extension("mute"); x.State != "starting" {
		t.Fatalf("mute during its handshake: %+v", x)
	}
	if st := e.Status(); st.Phase != client.PhaseStarting {
		t.Fatalf("status during the start: %+v", st)
	}
	var ce *client.Error
	if _, err := e.C.ApplyConfig(context.Background(), []byte(daemontest.Config)); !errors.As(err, &ce) || ce.Code != protocol.CodeUnavailable {
		t.Fatalf("apply while starting: %v", err)
	}
	e.Eventually("the daemon running", func() bool { return e.Status().Phase == client.PhaseRunning })
	if x := e.Extension("mute"); x.Code != protocol.CodeHandshakeFailed {
		t.Fatalf("mute after its handshake timed out: %+v", x)
	}
	// A restart of mute answers at once when asked not to wait; the API
	// keeps answering during its handshake.
	res, err := e.C.Restart(context.Background(), "mute", 0)
	if err != nil || res.Done {
		t.Fatalf("restart without waiting: %+v %v", res, err)
	}
	if x := e.Extension(probe.Name); x.State != "running" {
		t.Fatalf("probe during mute's restart: %+v", x)
	}
}
