// Package daemontest runs the real open-conduit binary for tests: a daemon
// with its own config and state directories in a test's temporary
// directory, the probe package installed beside the config, and helpers to
// drive the probe's host calls, read the operator's views and wait for what
// the daemon does in the background. The daemon's end-to-end tests and the
// drills share it.
package daemontest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/protocol"
)

// Deadline is how long a test waits for something the daemon does in the
// background (a start, a restart's backoff, a handshake) on a loaded
// machine.
const Deadline = 60 * time.Second

// Config has three scopes: alpha uses probe (an entry selecting secret s1,
// the connection api1), beta uses only hello, and delta names api1 only in
// a binding, with no probe entry. Its secrets are the Secrets variables.
const Config = `{
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

// HelloOnly is a config that uses only the bundled hello package, so a test
// can break the probe package without refusing the whole start.
const HelloOnly = `{"scopes": [{"id": "beta", "entries": [{"name": "h1", "type": "hello"}]}]}`

// Secrets are the values of the variables Config's secret references name,
// as serve's environment carries them. No log may ever contain one.
var Secrets = []string{"OC_TEST_S1=one-7f3a", "OC_TEST_S2=two-9c1e", "OC_TEST_S3=three-4b2d", "OC_TEST_TOKEN=tok-5e8f"}

// Bins are the binaries a test runs.
type Bins struct {
	// OpenConduit is the open-conduit binary.
	OpenConduit string
	// Probe is the probe package's executable.
	Probe string
}

// Build builds open-conduit and the probe into dir. A test binary calls it
// once, from TestMain.
func Build(dir string) (Bins, error) {
	b := Bins{OpenConduit: filepath.Join(dir, "open-conduit"), Probe: filepath.Join(dir, "probe-extension")}
	for out, pkg := range map[string]string{
		b.OpenConduit: "github.com/open-conduit/open-conduit",
		b.Probe:       "github.com/open-conduit/open-conduit/fixtures/probe/cmd/probe-extension",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return Bins{}, fmt.Errorf("go build %s (the tests need the go command): %w", pkg, err)
		}
	}
	return b, nil
}

// Main is a TestMain body: it builds the binaries into a temporary
// directory, sets *bins, runs the tests and removes the directory.
func Main(m *testing.M, bins *Bins) int {
	dir, err := os.MkdirTemp("", "oc-daemontest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bins, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Env is one daemon's directories, with the probe package installed and
// Config written, and the daemon's process when it runs.
type Env struct {
	T    testing.TB
	Bins Bins
	// Config is the config file; installed packages are beside it.
	Config string
	// State is the state directory.
	State string
	// Cmd is the running serve, nil when none runs.
	Cmd *exec.Cmd
	// Log is what serve printed.
	Log *SyncBuffer
	// C is the operator's client of this daemon.
	C *client.Client
}

// SyncBuffer is a process's output, written by its copier and read by the
// test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// New makes an Env in a temporary directory: the probe installed under
// config/extensions, Config written. The daemon is killed in cleanup.
func New(t testing.TB, bins Bins) *Env {
	t.Helper()
	root := t.TempDir()
	e := &Env{T: t, Bins: bins, Config: filepath.Join(root, "config", "config.json"), State: filepath.Join(root, "state")}
	if err := os.MkdirAll(e.ProbeDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bins.Probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ProbeDir(), "probe-extension"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	e.EditProbeManifest(func(*protocol.Manifest) {})
	e.WriteConfig(Config)
	e.C = client.New(e.State)
	t.Cleanup(e.Kill)
	return e
}

// ProbeDir is the installed probe package's directory.
func (e *Env) ProbeDir() string {
	return filepath.Join(filepath.Dir(e.Config), "extensions", probe.Name)
}

// EditProbeManifest writes the installed probe's manifest, changed by edit.
func (e *Env) EditProbeManifest(edit func(m *protocol.Manifest)) {
	e.T.Helper()
	m := probe.Extension().Manifest
	edit(m)
	data, err := m.MarshalIndent()
	if err != nil {
		e.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ProbeDir(), protocol.ManifestFile), data, 0o644); err != nil {
		e.T.Fatal(err)
	}
}

// WriteConfig replaces the config file.
func (e *Env) WriteConfig(text string) {
	e.T.Helper()
	if err := os.WriteFile(e.Config, []byte(text), 0o600); err != nil {
		e.T.Fatal(err)
	}
}

// Start runs serve on the Env's config and waits until the daemon runs
// its configuration.
func (e *Env) Start() {
	e.T.Helper()
	e.Launch("", nil, "--config", e.Config)
	e.Eventually("the daemon running its configuration", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning
	})
}

// Launch runs serve on the Env's state in dir (the test's own directory
// when empty), with Secrets and env added to the environment, and does not
// wait.
func (e *Env) Launch(dir string, env []string, args ...string) {
	e.T.Helper()
	e.Log = &SyncBuffer{}
	e.Cmd = exec.Command(e.Bins.OpenConduit, append([]string{"serve", "--state", e.State}, args...)...)
	e.Cmd.Dir = dir
	e.Cmd.Env = append(append(os.Environ(), Secrets...), env...)
	e.Cmd.Stdout, e.Cmd.Stderr = e.Log, e.Log
	if err := e.Cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
}

// Stop ends the daemon gracefully (SIGTERM) and wants a clean exit.
func (e *Env) Stop() {
	e.T.Helper()
	if e.Cmd == nil {
		return
	}
	_ = e.Cmd.Process.Signal(syscall.SIGTERM)
	if err := e.Cmd.Wait(); err != nil {
		e.T.Fatalf("serve exited with %v\n%s", err, e.Log)
	}
	e.Cmd = nil
}

// Kill ends the daemon as a crash does (SIGKILL).
func (e *Env) Kill() {
	if e.Cmd == nil {
		return
	}
	_ = e.Cmd.Process.Kill()
	_ = e.Cmd.Wait()
	e.Cmd = nil
}

// ServeFails runs serve expecting it to refuse the start, and returns what
// it printed.
func (e *Env) ServeFails(args ...string) string {
	e.T.Helper()
	cmd := exec.Command(e.Bins.OpenConduit, append([]string{"serve", "--state", e.State}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		e.T.Fatalf("serve %v should fail: %v\n%s", args, err, out)
	}
	return string(out)
}

// Eventually polls cond until it holds, or fails the test after Deadline.
func (e *Env) Eventually(what string, cond func() bool) {
	e.T.Helper()
	end := time.Now().Add(Deadline)
	for !cond() {
		if time.Now().After(end) {
			e.T.Fatalf("%s did not happen within %s\n%s", what, Deadline, e.Log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HostCall has the probe call a host method through the daemon, as the
// operator calling probe.call in scope, and returns the host's answer.
func (e *Env) HostCall(scope, method string, params any) probe.Answer {
	e.T.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		e.T.Fatal(err)
	}
	var in map[string]any
	_ = json.Unmarshal(fmt.Appendf(nil, `{"method":%q,"params":%s}`, method, raw), &in)
	res, err := e.C.Call(context.Background(), probe.Name, client.CallRequest{Operation: "probe.call", Scope: scope, Input: in})
	if err != nil {
		e.T.Fatalf("%s: %v\n%s", method, err, e.Log)
	}
	if res.Code != "" {
		e.T.Fatalf("probe.call %s refused %s: %s", method, res.Code, res.Message)
	}
	var a probe.Answer
	if err := json.Unmarshal(res.Output.Data, &a); err != nil {
		e.T.Fatal(err)
	}
	return a
}

// KVGet reads one of the probe's keys through the daemon.
func (e *Env) KVGet(ns, key string) (string, bool) {
	e.T.Helper()
	a := e.HostCall("", protocol.MethodKVGet, protocol.KVGetParams{Namespace: ns, Key: key})
	if a.Code != "" {
		e.T.Fatalf("kv.get: %s %s", a.Code, a.Message)
	}
	var r protocol.KVGetResult
	if err := json.Unmarshal(a.Result, &r); err != nil {
		e.T.Fatal(err)
	}
	return string(r.Value), r.Found
}

// Status is the daemon's status.
func (e *Env) Status() client.Status {
	e.T.Helper()
	st, err := e.C.Status(context.Background())
	if err != nil {
		e.T.Fatal(err)
	}
	return st
}

// Extensions is the daemon's list of packages.
func (e *Env) Extensions() client.Extensions {
	e.T.Helper()
	exts, err := e.C.Extensions(context.Background())
	if err != nil {
		e.T.Fatal(err)
	}
	return exts
}

// Extension is one package as the daemon lists it.
func (e *Env) Extension(name string) client.Extension {
	e.T.Helper()
	exts := e.Extensions()
	for _, x := range exts.Extensions {
		if x.Name == name {
			return x
		}
	}
	e.T.Fatalf("no extension %s in %+v", name, exts)
	return client.Extension{}
}

// HasCheck reports whether doctor ran a check of that name with that
// status.
func HasCheck(d client.Doctor, name, status string) bool {
	for _, c := range d.Checks {
		if c.Name == name && c.Status == status {
			return true
		}
	}
	return false
}

// CheckDetail is the detail of doctor's check of that name.
func CheckDetail(d client.Doctor, name string) string {
	for _, c := range d.Checks {
		if c.Name == name {
			return c.Detail
		}
	}
	return ""
}

// Alive reports whether pid is a live process (a zombie is not).
func Alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return syscall.Kill(pid, 0) == nil
}
