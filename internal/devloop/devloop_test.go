package devloop_test

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// deadline is how long a test waits for something dev or its daemon does
// (a build, a start, a restart) on a loaded machine.
const deadline = 2 * time.Minute

// binary is the open-conduit binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := exec.LookPath("go"); err != nil {
		// Every test here builds a package with the go command; each skips.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "oc-devloop-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "open-conduit")
	cmd := exec.Command("go", "build", "-o", binary, "github.com/open-conduit/open-conduit")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build open-conduit:", err)
		return 1
	}
	return m.Run()
}

// greeter writes the greeter package (testdata/greeter) into a new
// directory as a module of its own: its go.mod requires this checkout by a
// replace, with this module's requirements and sums, so it builds offline
// from the module cache.
func greeter(t *testing.T) string {
	t.Helper()
	if binary == "" {
		t.Skip("the go command is not on PATH: extension dev builds Go packages with it")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "greeter")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(mod), "module github.com/open-conduit/open-conduit", "module example.com/greeter", 1) +
		"\nrequire github.com/open-conduit/open-conduit v0.0.0\n\nreplace github.com/open-conduit/open-conduit => " + root + "\n"
	write(t, filepath.Join(dir, "go.mod"), text)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	src, err := os.ReadFile(filepath.Join("testdata", "greeter", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "main.go"), string(src))
	return dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in path, failing when old is not there.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q", path, old)
	}
	write(t, path, strings.Replace(string(data), old, new, 1))
}

// dev is one `open-conduit extension dev` run, with a temporary directory
// of its own and a home that is not the user's.
type dev struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *daemontest.SyncBuffer
	tmp  string        // the TMPDIR dev makes its directory in
	done chan struct{} // closed when dev has exited
}

func startDev(t *testing.T, args ...string) *dev {
	t.Helper()
	// Short, so the daemon's socket path under it fits a Unix socket's
	// bound and dev keeps its directory in it.
	base, err := os.MkdirTemp("", "ocd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	d := &dev{t: t, out: &daemontest.SyncBuffer{}, tmp: filepath.Join(base, "tmp"), done: make(chan struct{})}
	home := filepath.Join(base, "home")
	for _, dir := range []string{d.tmp, home} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d.cmd = exec.Command(binary, append([]string{"extension", "dev"}, args...)...)
	d.cmd.Env = append(os.Environ(), "TMPDIR="+d.tmp, "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"GOPROXY=off", "GOTOOLCHAIN=local",
		"GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "GOPATH="+goEnv(t, "GOPATH"))
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.done)
	}()
	// Registered after the directory's removal, so it runs first: dev
	// (which a failed test leaves running) is interrupted and given the
	// deadline to clean up, then killed.
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(os.Interrupt)
		select {
		case <-d.done:
		case <-time.After(deadline):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// wait polls cond until it holds, failing the test after deadline.
func (d *dev) wait(what string, cond func() bool) {
	d.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		select {
		case <-d.done:
			d.t.Fatalf("dev exited before %s; it printed:\n%s", what, d.out)
		default:
		}
		if time.Now().After(end) {
			d.t.Fatalf("%s did not happen within %s; dev printed:\n%s", what, deadline, d.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exit waits for dev to exit and returns its status.
func (d *dev) exit() int {
	d.t.Helper()
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(deadline):
		d.t.Fatalf("dev did not exit within %s; it printed:\n%s", deadline, d.out)
		return -1
	}
}

// leftEmpty fails unless dev's TMPDIR is empty: its directory is gone.
func (d *dev) leftEmpty() {
	d.t.Helper()
	ents, err := os.ReadDir(d.tmp)
	if err != nil {
		d.t.Fatal(err)
	}
	if len(ents) > 0 {
		d.t.Fatalf("dev left %s in %s", ents[0].Name(), d.tmp)
	}
}

// greeting is the greeter's answer to greeter.greet.
type greeting struct {
	Greeting string `json:"greeting"`
	Count    int    `json:"count"`
	PID      int    `json:"pid"`
}

func greet(t *testing.T, c *client.Client, out *daemontest.SyncBuffer) greeting {
	t.Helper()
	res, err := c.Call(context.Background(), "greeter", client.CallRequest{
		Operation: "greeter.greet", Scope: "dev", Input: map[string]any{"name": "ada"}})
	if err != nil || res.Code != "" {
		t.Fatalf("greeter.greet: %v %s %s; dev printed:\n%s", err, res.Code, res.Message, out)
	}
	var g greeting
	if err := json.Unmarshal(res.Output.Data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

var stateLine = regexp.MustCompile(`(?m)^  state: +(\S+)$`)

func TestDevRebuildsOnChangeKeepsKVAndCleansUp(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { devRebuildsAndStops(t, sig) })
	}
}

// devRebuildsAndStops runs dev on the greeter, changes it, breaks it, and
// stops dev with sig.
func devRebuildsAndStops(t *testing.T, sig os.Signal) {
	src := greeter(t)
	d := startDev(t, src, "--entry", `greeter={"owner":"ada"}`)
	d.wait("the package running and the source watched", func() bool { return strings.Contains(d.out.String(), "watching ") })
	m := stateLine.FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("dev did not say where the state is:\n%s", d.out)
	}
	state := m[1]
	root := filepath.Dir(state)
	if !strings.HasPrefix(root, d.tmp) {
		t.Fatalf("dev's state %s is not in a new directory under TMPDIR %s", state, d.tmp)
	}
	for _, want := range []string{"extension call --state " + state + " --scope dev greeter greeter.greet --input", "logs --state " + state + " greeter --follow", "daemon log:"} {
		if !strings.Contains(d.out.String(), want) {
			t.Errorf("dev did not print %q:\n%s", want, d.out)
		}
	}
	c := client.New(state)
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runs := runTokens(t, state)
	pids := []int{st.PID}

	first := greet(t, c, d.out)
	second := greet(t, c, d.out)
	if first.Greeting != "Hello, ada!" || first.Count != 1 || second.Count != 2 || second.PID != first.PID {
		t.Fatalf("before any change: %+v then %+v", first, second)
	}
	pids = append(pids, first.PID)
	// Built without cgo when the environment does not choose: no dynamic
	// loader runs at each start.
	if _, chosen := os.LookupEnv("CGO_ENABLED"); chosen {
		t.Log("CGO_ENABLED is set here, so dev builds as it says: the check that dev builds without cgo is left out")
	} else if interp, err := interpreter(fmt.Sprintf("/proc/%d/exe", first.PID)); err != nil || interp != "" {
		t.Errorf("the built greeter runs under the dynamic loader %q (%v); dev builds with CGO_ENABLED=0 unless the environment sets it", interp, err)
	}

	// A change to the source: rebuilt, restarted with a new pid, the new
	// text, and the count in KV going on.
	edit(t, filepath.Join(src, "main.go"), `const greeting = "Hello"`, `const greeting = "Howdy"`)
	d.wait("the package rebuilt and restarted", func() bool {
		return strings.Contains(d.out.String(), "rebuild ok: greeter restarted, pid")
	})
	third := greet(t, c, d.out)
	if third.Greeting != "Howdy, ada!" || third.Count != 3 || third.PID == first.PID {
		t.Fatalf("after the change: %+v (before: %+v)", third, second)
	}
	pids = append(pids, third.PID)

	// A change that does not build: reported, the running package kept.
	edit(t, filepath.Join(src, "main.go"), "func main() {", "func main() {{")
	d.wait("the failed rebuild reported", func() bool { return strings.Contains(d.out.String(), "rebuild failed") })
	if !strings.Contains(d.out.String(), "main.go") {
		t.Errorf("the failed rebuild did not print the compiler's output:\n%s", d.out)
	}
	fourth := greet(t, c, d.out)
	if fourth.Greeting != "Howdy, ada!" || fourth.Count != 4 || fourth.PID != third.PID {
		t.Fatalf("after a failed build: %+v (before: %+v)", fourth, third)
	}

	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if code := d.exit(); code != 0 {
		t.Fatalf("dev exited %d after %s:\n%s", code, sig, d.out)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d (daemon or package) still runs after dev stopped", pid)
		}
	}
	for _, run := range runs {
		if pids := marked(t, run); len(pids) > 0 {
			t.Errorf("processes %v still carry the daemon run's marker %s", pids, run)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("dev's directory %s is still there: %v", root, err)
	}
	d.leftEmpty()
}

// runTokens are the run tokens the daemon recorded in its state directory.
func runTokens(t *testing.T, state string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "processes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Runs []struct {
			Token string `json:"token"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rec.Runs {
		out = append(out, r.Token)
	}
	if len(out) == 0 {
		t.Fatalf("the daemon recorded no run in %s", state)
	}
	return out
}

// alive reports whether pid runs (a zombie waiting for its reaper does
// not).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// marked lists the live processes whose environment carries run's marker.
func marked(t *testing.T, run string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil || len(dirs) == 0 {
		t.Skip("no /proc to look for marked processes in")
	}
	var out []int
	key := []byte("OPEN_CONDUIT_RUN=" + run + ":")
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(data, key) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(f, "/proc/%d/environ", &pid); err == nil && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func TestDevRefusesToStart(t *testing.T) {
	notPackage := t.TempDir()
	write(t, filepath.Join(notPackage, "README"), "no package here")
	cases := []struct {
		name string
		args func(src string) []string
		edit func(t *testing.T, src string)
		code int
		want []string
	}{
		{name: "missing directory", args: func(string) []string { return []string{filepath.Join(notPackage, "nope")} },
			code: 2, want: []string{"nope", "no such file"}},
		{name: "not a package", args: func(string) []string { return []string{notPackage} },
			code: 2, want: []string{"neither open-conduit-extension.json nor go.mod"}},
		{name: "entry not JSON", args: func(src string) []string { return []string{src, "--entry", "greeter={"} },
			code: 2, want: []string{"--entry greeter: the config is not valid JSON"}},
		{name: "entry of an undeclared type", args: func(src string) []string { return []string{src, "--entry", "weather={}"} },
			code: 1, want: []string{`"weather", which greeter does not declare`}},
		{name: "config check refuses the generated entry", args: func(src string) []string { return []string{src} },
			code: 1, want: []string{"config field /owner is required", "/scopes/0/entries/0/config", `"id": "dev"`, "--entry TYPE=JSON"}},
		{name: "first build fails", args: func(src string) []string { return []string{src, "--entry", `greeter={"owner":"ada"}`} },
			edit: func(t *testing.T, src string) {
				edit(t, filepath.Join(src, "main.go"), "func main() {", "func main() {{")
			},
			code: 1, want: []string{"go build in", "main.go"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := greeter(t)
			if tc.edit != nil {
				tc.edit(t, src)
			}
			d := startDev(t, tc.args(src)...)
			if code := d.exit(); code != tc.code {
				t.Fatalf("exit %d, want %d; dev printed:\n%s", code, tc.code, d.out)
			}
			for _, w := range tc.want {
				if !strings.Contains(d.out.String(), w) {
					t.Errorf("dev did not say %q:\n%s", w, d.out)
				}
			}
			if strings.Contains(d.out.String(), "running, pid") {
				t.Errorf("dev started the daemon:\n%s", d.out)
			}
			d.leftEmpty()
		})
	}
}

// TestDevRunsAPackageAsItIs runs dev on a directory that holds its
// manifest (a package in any language): it is copied as it is, leaving out
// hidden directories, and a change to any file restarts it with its KV
// kept.
func TestDevRunsAPackageAsItIs(t *testing.T) {
	src := greeter(t)
	pkg := filepath.Join(t.TempDir(), "greeter")
	mkdirsT(t, filepath.Join(pkg, ".git"))
	cmd := exec.Command("go", "build", "-o", filepath.Join(pkg, "greeter-extension"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	manifest, err := exec.Command(filepath.Join(pkg, "greeter-extension"), "package-manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(pkg, "open-conduit-extension.json"), string(manifest))
	write(t, filepath.Join(pkg, ".git", "HEAD"), "ref: refs/heads/main\n")

	d := startDev(t, pkg, "--entry", `greeter={"owner":"ada"}`)
	d.wait("the package running and the source watched", func() bool { return strings.Contains(d.out.String(), "watching ") })
	state := stateLine.FindStringSubmatch(d.out.String())[1]
	installed := filepath.Join(filepath.Dir(state), "config", "extensions", "greeter")
	if _, err := os.Stat(filepath.Join(installed, "greeter-extension")); err != nil {
		t.Fatalf("the package was not laid out as it is: %v", err)
	}
	if _, err := os.Stat(filepath.Join(installed, ".git")); !os.IsNotExist(err) {
		t.Errorf("the hidden directory was copied into %s: %v", installed, err)
	}
	c := client.New(state)
	first := greet(t, c, d.out)

	write(t, filepath.Join(pkg, "notes.txt"), "a change\n")
	d.wait("the package restarted", func() bool { return strings.Contains(d.out.String(), "rebuild ok: greeter restarted, pid") })
	second := greet(t, c, d.out)
	if second.Count != first.Count+1 || second.PID == first.PID {
		t.Fatalf("after the change: %+v (before: %+v)", second, first)
	}
	if _, err := os.Stat(filepath.Join(installed, "notes.txt")); err != nil {
		t.Errorf("the changed package was not swapped in: %v", err)
	}
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := d.exit(); code != 0 {
		t.Fatalf("dev exited %d:\n%s", code, d.out)
	}
	d.leftEmpty()
}

// interpreter is the ELF interpreter (the dynamic loader) the binary at
// path names, "" for a statically linked one.
func interpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			return strings.TrimRight(string(b), "\x00"), err
		}
	}
	return "", nil
}

// TestInterpreterNamesTheLoaderOfADynamicBinary is the control for the
// check that dev's builds are static: a binary built with cgo and net
// names its loader.
func TestInterpreterNamesTheLoaderOfADynamicBinary(t *testing.T) {
	if binary == "" {
		t.Skip("the go command is not on PATH: the control builds a binary with it")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc on PATH: a cgo build, the control's dynamic binary, needs a C compiler")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/dyn\n")
	write(t, filepath.Join(dir, "main.go"), "package main\n\nimport \"net\"\n\nfunc main() { _, _ = net.LookupHost(\"localhost\") }\n")
	for _, tc := range []struct {
		cgo     string
		dynamic bool
	}{{"1", true}, {"0", false}} {
		bin := filepath.Join(dir, "dyn-"+tc.cgo)
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+tc.cgo, "GOPROXY=off", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build with CGO_ENABLED=%s: %v\n%s", tc.cgo, err, out)
		}
		interp, err := interpreter(bin)
		if err != nil {
			t.Fatal(err)
		}
		if (interp != "") != tc.dynamic {
			t.Errorf("CGO_ENABLED=%s: interpreter %q, want dynamic %v", tc.cgo, interp, tc.dynamic)
		}
	}
}

func mkdirsT(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
