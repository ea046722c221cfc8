package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// bin is open-conduit, built once for this test binary.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "open-conduit-main-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "open-conduit")
	code := 1
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build (the tests need the go command): %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// command is the binary run in dir with a clean environment: the XDG
// directories are the test's, so nothing reads or writes the user's.
func command(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "OPEN_CONDUIT_STATE=", "TZ=Asia/Kolkata")
	return cmd
}

// result runs cmd and returns its exit status and streams. A command that
// has not ended after minutes is killed, so a wrong one (a serve that
// should have refused to start) fails the test rather than hanging it.
func result(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(3*time.Minute, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Fatalf("%v was still running after 3 minutes; killed it\n%s%s", cmd.Args, out.String(), errb.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// realDir is dir with symlinks resolved, as a process started in it sees
// its working directory.
func realDir(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestBinaryEndToEnd runs the real binary: the demo starts the bundled
// extension as a process (the binary itself, as extension-run), and
// extension-run prints a manifest protocol validates.
func TestBinaryEndToEnd(t *testing.T) {
	out, err := exec.Command(bin, "extension-run", "hello", "package-manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.ParseAndValidateManifest(out); err != nil {
		t.Fatalf("extension-run hello package-manifest: %v\n%s", err, out)
	}

	state := t.TempDir()
	demo := exec.Command(bin, "demo", "--state", state, "--name", "ada", "--name", "ada")
	got, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, got)
	}
	for _, want := range []string{
		`"greeting":"Hello, ada!","count":1`,
		`"greeting":"Hello, ada!","count":2`,
		"refused bad_request",
		"ok: 1 names greeted, 0 heartbeats sent",
		"hello.greetings/ada = 2",
		"exited",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
	log, err := os.ReadFile(filepath.Join(state, "logs", "extensions", "hello.log"))
	if err != nil || !strings.Contains(string(log), "extension-run hello") {
		t.Fatalf("the extension's log: %v\n%s", err, log)
	}

	// config check starts hello for validate alone: a config it refuses is
	// an error at the object's path; one it accepts passes.
	cfgDir := t.TempDir()
	bad := filepath.Join(cfgDir, "bad.json")
	os.WriteFile(bad, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greting":"hi"}}]}]}`), 0o644)
	out, err = exec.Command(bin, "config", "check", "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "/scopes/0/entries/0/config") || !strings.Contains(string(out), "invalid_config") {
		t.Fatalf("config check of a config hello refuses: %v\n%s", err, out)
	}
	good := filepath.Join(cfgDir, "good.json")
	os.WriteFile(good, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greeting":"hi"}}]}]}`), 0o644)
	if out, err := exec.Command(bin, "config", "check", "--config", good).CombinedOutput(); err != nil {
		t.Fatalf("config check of a good config: %v\n%s", err, out)
	}
}

func TestBinaryResolvesRelativePathsAgainstItsWorkingDirectory(t *testing.T) {
	dir := realDir(t, t.TempDir())
	if code, out, errs := result(t, command(t, dir, "config", "init", "--config", "conf/config.json")); code != 0 ||
		!strings.Contains(out, "wrote "+filepath.Join(dir, "conf", "config.json")) ||
		!strings.Contains(out, "open-conduit serve --config "+filepath.Join(dir, "conf", "config.json")) {
		t.Fatalf("config init: %d\n%s%s", code, out, errs)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"config check names the file it checked", []string{"config", "check", "--config", "conf/config.json"},
			filepath.Join(dir, "conf", "config.json") + " is valid"},
		{"extension list offline gives each log's path in the state directory",
			[]string{"extension", "list", "--state", "st", "--config", "conf/config.json"},
			filepath.Join(dir, "st", "logs", "extensions", "hello.log")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := result(t, command(t, dir, c.args...))
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("code %d, want stdout to hold %q:\n%s%s", code, c.want, out, errs)
			}
		})
	}
	// Negative control: the same relative path from another directory
	// names a file that is not there.
	code, _, errs := result(t, command(t, t.TempDir(), "config", "check", "--config", "conf/config.json"))
	if code != 1 || !strings.Contains(errs, "conf/config.json") {
		t.Fatalf("from elsewhere: %d %s", code, errs)
	}
}

func TestBinaryMisuseAndAMissingConfigFailInOneLine(t *testing.T) {
	dir := realDir(t, t.TempDir())
	cases := []struct {
		name     string
		args     []string
		wantCode int
		says     string
	}{
		{"a log level that is not one", []string{"serve", "--log-level", "nonsense", "--state", "st"}, 2, "debug, info, warn, error"},
		{"a log format that is not one", []string{"serve", "--log-format", "yaml", "--state", "st"}, 2, "text, json"},
		{"a named config file that is missing", []string{"serve", "--config", "missing.json", "--state", "st"}, 1,
			filepath.Join(dir, "missing.json")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := result(t, command(t, dir, c.args...))
			if code != c.wantCode || out != "" || strings.Count(errs, "\n") != 1 ||
				!strings.HasPrefix(errs, "open-conduit serve: ") || !strings.Contains(errs, c.says) {
				t.Fatalf("code %d (want %d), stdout %q, stderr %q (want one line saying %q)", code, c.wantCode, out, errs, c.says)
			}
		})
	}
}

// daemon is a running open-conduit serve whose log (JSON lines) the test
// reads.
type daemon struct {
	t     *testing.T
	cmd   *exec.Cmd
	state string
	mu    sync.Mutex
	lines []map[string]any
	done  chan struct{}
}

// serve starts the binary's serve in dir and waits until its API answers.
func serve(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, state: filepath.Join(dir, "st"), done: make(chan struct{})}
	d.cmd = command(t, dir, append([]string{"serve", "--state", "st", "--log-format", "json"}, args...)...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go d.read(stderr)
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	c := client.New(d.state)
	d.waitFor("the daemon to run its configuration", func() bool {
		st, err := c.Status(context.Background())
		return err == nil && st.PID == d.cmd.Process.Pid && st.Phase == client.PhaseRunning
	})
	return d
}

func (d *daemon) read(r io.Reader) {
	defer close(d.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			line = map[string]any{"msg": "not JSON: " + sc.Text()}
		}
		d.mu.Lock()
		d.lines = append(d.lines, line)
		d.mu.Unlock()
	}
}

// logged returns the log lines whose msg is msg.
func (d *daemon) logged(msg string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, l := range d.lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

func (d *daemon) dump() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, l := range d.lines {
		fmt.Fprintf(&b, "%v\n", l)
	}
	return b.String()
}

// waitFor polls cond until it holds, failing after a deadline generous
// enough for a loaded machine.
func (d *daemon) waitFor(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("gave up waiting for %s; the daemon's log:\n%s", what, d.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and wants a clean exit.
func (d *daemon) stop() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	if err := d.cmd.Wait(); err != nil {
		d.t.Fatalf("serve exited with %v; its log:\n%s", err, d.dump())
	}
}

func TestServeReloadsTheConfigOnSIGHUPAndStopsOnSIGTERM(t *testing.T) {
	dir := realDir(t, t.TempDir())
	if code, out, errs := result(t, command(t, dir, "config", "init", "--config", "config.json")); code != 0 {
		t.Fatalf("config init: %d %s%s", code, out, errs)
	}
	file := filepath.Join(dir, "config.json")
	d := serve(t, dir, "--config", "config.json")
	c := client.New(d.state)
	generation := func() int64 {
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Generation
	}
	first := generation()

	steps := []struct {
		name string
		edit func(text string) string
		msg  string // the log line the reload ends with
		// applied says the generation moves on.
		applied bool
	}{
		{"a changed file is applied", func(s string) string {
			return strings.Replace(s, `"config": {}`, `"config": {"greeting": "Hi"}`, 1)
		}, "config reload: applied", true},
		{"the same file again is no change", nil, "config reload: no changes", false},
		{"a file with an error keeps the running generation", func(s string) string {
			return strings.Replace(s, `"greeting": "Hi"`, `"greting": "Hi"`, 1)
		}, "config reload: not applied; the running generation stays", false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.edit != nil {
				data, _ := os.ReadFile(file)
				edited := s.edit(string(data))
				if edited == string(data) {
					t.Fatalf("the edit changed nothing in:\n%s", data)
				}
				if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before, seen := generation(), len(d.logged(s.msg))
			if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			d.waitFor(fmt.Sprintf("%q in the log", s.msg), func() bool { return len(d.logged(s.msg)) > seen })
			after := generation()
			if s.applied != (after > before) {
				t.Fatalf("generation %d → %d after %q", before, after, s.msg)
			}
		})
	}
	if probs := d.logged("config problem"); len(probs) == 0 || probs[0]["path"] != "/scopes/0/entries/0/config" {
		t.Errorf("the refused reload's problem is not logged at its path:\n%s", d.dump())
	}
	if generation() <= first {
		t.Errorf("the generation never moved on from %d", first)
	}
	d.stop()
}

func TestEventsListPrintsZonedTimesAndAHintThatKeepsItsFlags(t *testing.T) {
	dir := realDir(t, t.TempDir())
	if code, out, errs := result(t, command(t, dir, "config", "init", "--config", "config.json")); code != 0 {
		t.Fatalf("config init: %d %s%s", code, out, errs)
	}
	d := serve(t, dir, "--config", "config.json")
	for _, name := range []string{"ada", "bob", "cy"} {
		code, out, errs := result(t, command(t, dir, "extension", "call", "hello", "hello.greet", "--scope", "main",
			"--input", `{"name":"`+name+`"}`, "--state", "st"))
		if code != 0 {
			t.Fatalf("greeting %s: %d %s%s", name, code, out, errs)
		}
	}
	code, out, errs := result(t, command(t, dir, "events", "list", "--limit", "1", "--scope", "main", "--state", "st"))
	if code != 0 {
		t.Fatalf("events list: %d %s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header, an Event and a hint:\n%s", out)
	}
	// TZ is Asia/Kolkata: the time says so.
	if !regexp.MustCompile(`^\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+05:30\s+main\s+hello.greeted`).MatchString(lines[1]) {
		t.Errorf("the Event's row: %q", lines[1])
	}
	seq := strings.Fields(lines[1])[0]
	want := "more: open-conduit events list --after " + seq + " --limit 1 --scope main --state " + d.state
	if lines[2] != want {
		t.Errorf("hint\n got %s\nwant %s", lines[2], want)
	}
	// The hint reads on: the next page is the next Event.
	args := strings.Fields(strings.TrimPrefix(lines[2], "more: open-conduit "))
	code, next, errs := result(t, command(t, t.TempDir(), args...))
	nextLines := strings.Split(strings.TrimSpace(next), "\n")
	if code != 0 || len(nextLines) < 2 || !strings.Contains(nextLines[1], "hello.greeted") {
		t.Fatalf("following the hint from another directory: %d\n%s%s", code, next, errs)
	}
	first, _ := strconv.ParseUint(seq, 10, 64)
	if got, err := strconv.ParseUint(strings.Fields(nextLines[1])[0], 10, 64); err != nil || got <= first {
		t.Errorf("the next page starts at %d (%v), not after %d", got, err, first)
	}
	d.stop()
}

// TestOperatorCommandsOnTheRealBinary walks an operator's first hour
// through the commands: a call in an unknown scope commits nothing, a
// restart restarts only that package, a package copied in while serve runs
// appears after a rescan, and an applied config survives a restart.
func TestOperatorCommandsOnTheRealBinary(t *testing.T) {
	dir := realDir(t, t.TempDir())
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := result(t, command(t, dir, append(args, "--state", "st")...))
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	if code, out, errs := result(t, command(t, dir, "config", "init", "--config", "cfg/config.json")); code != 0 {
		t.Fatalf("config init: %d %s%s", code, out, errs)
	}
	d := serve(t, dir, "--config", "cfg/config.json")

	greet := `{"name":"ada"}`
	if out := run(1, "extension", "call", "hello", "hello.greet", "--scope", "nosuch", "--input", greet); !strings.Contains(out, `scope "nosuch" is not configured`) {
		t.Fatalf("a call in an unknown scope: %s", out)
	}
	if out := run(0, "extension", "call", "hello", "hello.greet", "--scope", "main", "--input", greet); !strings.Contains(out, `"count":1`) {
		t.Fatalf("the refused call was counted: %s", out)
	}

	pid := func(name string) float64 {
		var exts client.Extensions
		if err := json.Unmarshal([]byte(run(0, "extension", "list", "--json")), &exts); err != nil {
			t.Fatal(err)
		}
		for _, x := range exts.Extensions {
			if x.Name == name && x.State == "running" {
				return float64(x.PID)
			}
		}
		return 0
	}
	before := pid("hello")
	run(0, "extension", "restart", "hello")
	if after := pid("hello"); after == 0 || after == before {
		t.Fatalf("hello's pid %v → %v", before, after)
	}
	if out := run(0, "logs", "hello", "--tail", "20"); !strings.Contains(out, "restarting at the operator's request") {
		t.Fatalf("hello's log: %s", out)
	}

	probeDir := filepath.Join(dir, "cfg", "extensions", "probe")
	if err := os.MkdirAll(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(probeDir, "probe-extension"), "./fixtures/probe/cmd/probe-extension").CombinedOutput(); err != nil {
		t.Fatalf("go build the probe: %v\n%s", err, out)
	}
	manifest, err := exec.Command(filepath.Join(probeDir, "probe-extension"), "package-manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(probeDir, "open-conduit-extension.json"), manifest, 0o644)
	if out := run(0, "extension", "rescan"); !strings.Contains(out, "added    probe") {
		t.Fatalf("rescan: %s", out)
	}
	if pid("probe") == 0 {
		t.Fatal("probe is not running after the rescan")
	}

	text, _ := os.ReadFile(filepath.Join(dir, "cfg", "config.json"))
	other := strings.Replace(string(text), `"entries": [`, `"entries": [
        {"name": "p1", "type": "probe"},`, 1)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(other), 0o600)
	if out := run(0, "config", "apply", "--config", "other.json"); !strings.Contains(out, "applied generation 2") {
		t.Fatalf("apply: %s", out)
	}
	d.stop()
	serve(t, dir, "--config", "cfg/config.json")
	if out := run(0, "config", "show"); !strings.Contains(out, `"name": "p1"`) || !strings.Contains(out, "generation 2") {
		t.Fatalf("after a restart the applied config is gone: %s", out)
	}
	run(0, "doctor")
}
