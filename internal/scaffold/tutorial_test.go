package scaffold_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

// tutorialDoc is the tutorial the test runs.
const tutorialDoc = "../../docs/authoring.md"

// step is one marked block of the tutorial. A marker is an HTML comment
// on the line before a fenced block: `<!-- tutorial:file PATH -->` writes
// the block to PATH (relative to the tutorial's home directory),
// `tutorial:run` runs it with sh -e from there, `tutorial:fails` runs it
// and wants it to fail, `tutorial:serve` starts it in the background and
// waits for the daemon, `tutorial:output` holds lines the last run's
// output must contain. `<!-- tutorial:needs TOOL -->`, with no block,
// starts a part of the tutorial that needs TOOL.
type step struct {
	kind, arg string
	line      int
	body      string
}

// part is the steps between two needs markers.
type part struct {
	needs string
	steps []step
}

var marker = regexp.MustCompile(`^<!-- tutorial:(\w+)(?: (\S+))? -->$`)

// readTutorial parses the marked steps, in order, into parts.
func readTutorial(t *testing.T, path string) []part {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parts := []part{{}}
	var pending *step
	var body *strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case body != nil && strings.HasPrefix(line, "```"):
			pending.body = body.String()
			parts[len(parts)-1].steps = append(parts[len(parts)-1].steps, *pending)
			pending, body = nil, nil
		case body != nil:
			body.WriteString(line + "\n")
		case pending != nil && strings.HasPrefix(line, "```"):
			body = &strings.Builder{}
		case marker.MatchString(line):
			m := marker.FindStringSubmatch(line)
			if m[1] == "needs" {
				parts = append(parts, part{needs: m[2]})
				continue
			}
			pending = &step{kind: m[1], arg: m[2], line: n}
		}
	}
	if pending != nil {
		t.Fatalf("%s:%d: a tutorial marker with no fenced block after it", path, pending.line)
	}
	return parts
}

// TestTutorialFromExtensionNewToAnInstalledPackage runs docs/authoring.md
// as written, in a temporary home directory, against the real binary and
// a real daemon: extension new (with --replace to this checkout, since the
// build names no published version), the new repository's own make check
// on the untouched scaffold, the changed files, make check again, install,
// the config, serve, the calls and their output; then the Python package,
// installed into the running daemon and called. It is the test that a
// scaffold passes its own make check, so the tutorial must run make check
// before it changes a file of the scaffold.
func TestTutorialFromExtensionNewToAnInstalledPackage(t *testing.T) {
	bin, root := openConduit(t), checkout(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make on PATH to run the package's make check")
	}
	parts := readTutorial(t, tutorialDoc)
	checkScaffoldFirst(t, parts[0].steps)
	tu := newTutorial(t, bin, root)
	for i, p := range parts {
		ok := t.Run(fmt.Sprintf("part %d", i+1), func(t *testing.T) {
			if p.needs != "" {
				if _, err := exec.LookPath(p.needs); err != nil {
					t.Skipf("needs %s on PATH: this part of the tutorial is skipped", p.needs)
				}
			}
			for _, s := range p.steps {
				tu.do(t, s)
			}
		})
		if !ok {
			break
		}
	}
}

// checkScaffoldFirst wants a make check before the first file the tutorial
// writes into the new repository.
func checkScaffoldFirst(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		switch {
		case s.kind == "run" && strings.Contains(s.body, "make check"):
			return
		case s.kind == "file" && strings.HasPrefix(s.arg, "greeter/"):
			t.Fatalf("%s:%d: the tutorial changes the scaffold before its first make check", tutorialDoc, s.line)
		}
	}
	t.Fatalf("%s: the tutorial never runs make check", tutorialDoc)
}

// tutorial is the reader's machine: a home directory, the binary on PATH,
// the daemon once it is served.
type tutorial struct {
	home, root string
	env        []string
	last       string
	daemon     *exec.Cmd
	log        *bytes.Buffer
}

func newTutorial(t *testing.T, bin, root string) *tutorial {
	// A short directory: the daemon's socket lives under it, and a socket
	// path is limited to about 100 bytes.
	home, err := os.MkdirTemp("", "oct-")
	if err != nil {
		t.Fatal(err)
	}
	home, _ = filepath.EvalSymlinks(home)
	tu := &tutorial{home: home, root: root}
	t.Cleanup(func() {
		tu.stop(t)
		_ = os.RemoveAll(home)
	})
	var keep []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "OPEN_CONDUIT_STATE", "PATH", "GOWORK":
		default:
			keep = append(keep, kv)
		}
	}
	// The go command's caches stay the shared ones, not ones under the new
	// home, so the package builds from what this checkout already built.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, v+"="+strings.TrimSpace(string(out)))
	}
	tu.env = append(keep, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "GOWORK=off", "GOTOOLCHAIN=local",
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return tu
}

// do carries out one step.
func (tu *tutorial) do(t *testing.T, s step) {
	t.Helper()
	at := fmt.Sprintf("%s:%d", tutorialDoc, s.line)
	switch s.kind {
	case "file":
		path := filepath.Join(tu.home, filepath.FromSlash(s.arg))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s.body), 0o644); err != nil {
			t.Fatal(err)
		}
	case "run", "fails":
		out, err := tu.sh(s.body)
		t.Logf("%s: %s%s", at, s.body, out)
		if s.kind == "run" && err != nil {
			t.Fatalf("%s: %v\n%s", at, err, out)
		}
		var ee *exec.ExitError
		if s.kind == "fails" && !errors.As(err, &ee) {
			t.Fatalf("%s: the step should fail: %v\n%s", at, err, out)
		}
		tu.last = out
	case "output":
		got := strings.Join(strings.Fields(tu.last), "")
		for _, l := range strings.Split(strings.TrimSpace(s.body), "\n") {
			if !strings.Contains(got, strings.Join(strings.Fields(l), "")) {
				t.Fatalf("%s: the output lacks %q:\n%s", at, l, tu.last)
			}
		}
	case "serve":
		tu.serve(t, at, s.body)
	default:
		t.Fatalf("%s: unknown tutorial marker %q", at, s.kind)
	}
}

// sh runs a shell block from the home directory. extension new gets
// --replace to this checkout.
func (tu *tutorial) sh(script string) (string, error) {
	script = strings.ReplaceAll(script, "open-conduit extension new ", "open-conduit extension new --replace '"+tu.root+"' ")
	cmd := exec.Command("sh", "-e", "-c", script)
	cmd.Dir, cmd.Env = tu.home, tu.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serve starts the block's command in the background and waits for its
// daemon to run its configuration.
func (tu *tutorial) serve(t *testing.T, at, script string) {
	t.Helper()
	tu.log = &bytes.Buffer{}
	tu.daemon = exec.Command("sh", "-e", "-c", "exec "+strings.TrimSpace(script))
	tu.daemon.Dir, tu.daemon.Env = tu.home, tu.env
	tu.daemon.Stdout, tu.daemon.Stderr = tu.log, tu.log
	if err := tu.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	c := client.New(filepath.Join(tu.home, ".local", "state", "open-conduit"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := c.Status(context.Background())
		if err == nil && st.Phase == client.PhaseRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the daemon is not running its configuration after 60s: %v\n%s", at, err, tu.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the daemon as Ctrl-C does.
func (tu *tutorial) stop(t *testing.T) {
	if tu.daemon == nil {
		return
	}
	_ = tu.daemon.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- tu.daemon.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v\n%s", err, tu.log)
		}
	case <-time.After(60 * time.Second):
		_ = tu.daemon.Process.Kill()
		<-done
		t.Errorf("serve did not stop within 60s of SIGINT\n%s", tu.log)
	}
	tu.daemon = nil
}
