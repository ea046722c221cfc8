package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/tui"
)

// embedDeadline bounds each wait for the embedded daemon (a start of six
// packages on a loaded two-core machine).
const embedDeadline = 60 * time.Second

// screen is what the dashboard drew, written by its program and read by
// the test.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.Strip(s.buf.String())
}

// noTerminal sets the XDG directories to the test's, so the default
// config file is missing (the embedded demo runs) and nothing of the
// user's is read.
func noTerminal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv(client.StateEnv, "")
	t.Setenv("NO_COLOR", "1")
}

// swapDashboard makes the command show its dashboard through drive
// instead of the terminal, for this test.
func swapDashboard(t *testing.T, drive func(ctx context.Context, api tui.API) error) {
	runDashboard = drive
	t.Cleanup(func() { runDashboard = tui.Run })
}

// eventually polls cond until it holds or embedDeadline passes.
func eventually(what string, cond func() bool) error {
	deadline := time.Now().Add(embedDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", embedDeadline, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// whileShown is what the test saw while the dashboard ran on the
// embedded daemon.
type whileShown struct {
	status client.Status
	pids   map[string]int
	// again is a second tui --embedded on the same state.
	again struct {
		code   int
		stderr string
	}
	err error
}

// TestTUIEmbeddedServesTheDemoAndStopsItsDaemonOnQuit runs 'tui
// --embedded' through Main with the dashboard on pipes: while it shows,
// the daemon answers on the state's socket with the demo's packages
// running, a second --embedded on that state is refused, and the
// dashboard draws them live; after q, Main returns 0, the socket is gone,
// no package's process is left, and the log is in the state directory,
// owner-only.
func TestTUIEmbeddedServesTheDemoAndStopsItsDaemonOnQuit(t *testing.T) {
	noTerminal(t)
	state := filepath.Join(t.TempDir(), "st")
	in, keys, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer keys.Close()
	var drawn screen
	var seen whileShown
	swapDashboard(t, func(ctx context.Context, api tui.API) error {
		done := make(chan struct{})
		go func() {
			defer close(done)
			seen = observe(ctx, state, &drawn)
			// q quits, whatever was seen: a failure is reported after.
			keys.Write([]byte("q"))
		}()
		err := tui.RunWith(ctx, api, in, &drawn)
		<-done
		return err
	})

	code, stdout, stderr := run("tui", "--embedded", "--state", state)
	if seen.err != nil {
		t.Fatalf("%v\nscreen:\n%s\nstderr:\n%s", seen.err, lastScreen(drawn.text()), stderr)
	}
	logPath := filepath.Join(state, tuiLogName)
	if code != 0 || stdout != "" {
		t.Fatalf("code %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"its log goes to " + logPath, "the daemon stopped; its log is " + logPath} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if seen.status.Config != "embedded default" || seen.status.PID != os.Getpid() {
		t.Errorf("the daemon on the socket is not this process running the embedded demo: %+v", seen.status)
	}
	if seen.again.code != 1 || strings.Count(seen.again.stderr, "\n") != 1 ||
		!strings.Contains(seen.again.stderr, "a daemon already serves "+state) || !strings.Contains(seen.again.stderr, "drop --embedded") {
		t.Errorf("a second tui --embedded on the served state: code %d, stderr %q", seen.again.code, seen.again.stderr)
	}

	if _, err := os.Stat(client.SocketPath(state)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after quitting: %v", err)
	}
	for name, pid := range seen.pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("package %s's process %d is still there after quitting (kill 0: %v)", name, pid, err)
		}
	}
	if left := packageChildren(t); len(left) > 0 {
		t.Errorf("package processes left after quitting: %v", left)
	}
	fi, err := os.Stat(logPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the daemon's log %s: %v, mode %v (want 0600)", logPath, err, fi.Mode())
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "open-conduit serving") || !strings.Contains(string(log), "open-conduit stopped") {
		t.Errorf("the daemon's log lacks its start and stop:\n%s", log)
	}
}

// observe waits, while the dashboard runs, until the daemon on the
// state's socket runs every demo package and the dashboard draws them
// live, and tries a second --embedded on the same state.
func observe(ctx context.Context, state string, drawn *screen) (seen whileShown) {
	c := client.New(state)
	want := extensions.Names()
	seen.err = eventually("the daemon to run every demo package", func() bool {
		st, err := c.Status(ctx)
		if err != nil || st.Phase != client.PhaseRunning {
			return false
		}
		exts, err := c.Extensions(ctx)
		if err != nil {
			return false
		}
		pids := map[string]int{}
		for _, x := range exts.Extensions {
			if x.State == "running" && x.PID > 0 {
				pids[x.Name] = x.PID
			}
		}
		seen.status, seen.pids = st, pids
		return len(pids) == len(want)
	})
	if seen.err != nil {
		return seen
	}
	seen.err = eventually("the dashboard to show the packages live", func() bool {
		s := lastScreen(drawn.text())
		if !strings.Contains(s, "[Extensions]") || !strings.Contains(s, "live") {
			return false
		}
		for _, name := range want {
			if !strings.Contains(s, name) {
				return false
			}
		}
		return true
	})
	if seen.err != nil {
		return seen
	}
	seen.again.code, _, seen.again.stderr = run("tui", "--embedded", "--state", state)
	return seen
}

// lastScreen is the output's tail, which holds the frames drawn last:
// what the dashboard shows now, not what it showed while connecting.
func lastScreen(s string) string { return s[max(0, len(s)-8000):] }

// packageChildren lists this test process's children that run a package
// (extension-run), from /proc.
func packageChildren(t *testing.T) []string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to list child processes: %v", err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name's closing parenthesis: state,
		// then the parent's pid.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != me {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if slices.Contains(args, "extension-run") {
			out = append(out, p.Name()+" "+strings.Join(args, " "))
		}
	}
	return out
}

func TestTUIEmbeddedWithABrokenConfigFailsWithTheDaemonsError(t *testing.T) {
	noTerminal(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "config.json")
	if err := os.WriteFile(bad, []byte(`{"scopes": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	shown := false
	swapDashboard(t, func(context.Context, tui.API) error { shown = true; return nil })
	code, stdout, stderr := run("tui", "--embedded", "--config", bad, "--state", filepath.Join(dir, "st"))
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || stdout != "" || shown || !strings.HasPrefix(last, "open-conduit tui: ") || !strings.Contains(last, bad) {
		t.Fatalf("code %d, dashboard shown %v, stdout %q, stderr:\n%s", code, shown, stdout, stderr)
	}
	if _, err := os.Stat(client.SocketPath(filepath.Join(dir, "st"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a socket is left after the refused start: %v", err)
	}
}

func TestTUIWithoutADaemonPointsAtServeAndEmbedded(t *testing.T) {
	noTerminal(t)
	state := t.TempDir()
	shown := false
	swapDashboard(t, func(context.Context, tui.API) error { shown = true; return nil })
	code, stdout, stderr := run("tui", "--state", state)
	if code != 1 || stdout != "" || shown || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "no daemon answers") ||
		!strings.Contains(stderr, "open-conduit serve --state "+state) ||
		!strings.Contains(stderr, "open-conduit tui --embedded --state "+state) {
		t.Fatalf("code %d, dashboard shown %v, stdout %q, stderr %q", code, shown, stdout, stderr)
	}
}

func TestTUIDaemonFlagsWithoutEmbeddedAreMisuse(t *testing.T) {
	noTerminal(t)
	for _, args := range [][]string{
		{"--config", filepath.Join(t.TempDir(), "c.json")},
		{"--webhook-addr", "127.0.0.1:0"},
	} {
		code, _, stderr := run(append([]string{"tui", "--state", t.TempDir()}, args...)...)
		if code != 2 || !strings.Contains(stderr, args[0]+" is for the daemon --embedded starts") {
			t.Errorf("tui %v: code %d, stderr %q", args, code, stderr)
		}
	}
}
