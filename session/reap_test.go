package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// childKinds are the children the spawning wrapper starts before it runs
// the transport extension: one that stays in the extension's group, one
// that ignores SIGTERM, and one that leaves for a session of its own.
var childKinds = []string{"plain", "ignores-term", "setsid"}

// spawningTransport is the transport extension behind a shell script that
// first starts one child of each kind, each recording "<kind> <pid>" in
// the file children of the package directory.
func spawningTransport(t *testing.T) (session.Package, string) {
	t.Helper()
	for _, tool := range []string{"sh", "setsid", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the spawning extension needs %s, which is not on PATH", tool)
		}
	}
	dir := filepath.Join(t.TempDir(), transport.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
sh -c 'echo "plain $$" >> children; exec sleep 600' </dev/null >/dev/null 2>&1 &
sh -c 'trap "" TERM; echo "ignores-term $$" >> children; exec sleep 600' </dev/null >/dev/null 2>&1 &
setsid sh -c 'echo "setsid $$" >> children; exec sleep 600' </dev/null >/dev/null 2>&1 &
exec '%s' "$@"
`, filepath.Join(transportDir, "transport-extension"))
	if err := os.WriteFile(filepath.Join(dir, "transport-extension"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return session.Package{Dir: dir, Manifest: loadManifest(t, transportDir)}, dir
}

// childPIDs waits until every kind of child has recorded its pid, and
// returns them by kind.
func childPIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	got := map[string]int{}
	waitFor(t, "every child to record its pid", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "children"))
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			kind, pid, ok := strings.Cut(line, " ")
			if n, err := strconv.Atoi(pid); ok && err == nil {
				got[kind] = n
			}
		}
		return len(got) == len(childKinds)
	})
	return got
}

func TestStoppingAnExtensionKillsEveryChildItStarted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding children outside the process group needs Linux's /proc")
	}
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, s *session.Session)
	}{
		{"close", func(t *testing.T, s *session.Session) {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash", func(t *testing.T, s *session.Session) {
			if _, err := call[transport.Empty](context.Background(), s, "transport.crash", transport.Count{N: 3}); !errors.Is(err, protocol.ErrTransport) {
				t.Fatalf("crash mid-call: %v", err)
			}
		}},
		{"restart", func(t *testing.T, s *session.Session) {
			if err := s.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg, dir := spawningTransport(t)
			s := newSession(t, pkg, func(o *session.Options) { o.Backoff.Min = time.Hour })
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			children := childPIDs(t, dir)
			for kind, pid := range children {
				if !alive(pid) {
					t.Fatalf("the %s child (pid %d) is not running before the stop", kind, pid)
				}
			}
			tc.stop(t, s)
			waitFor(t, "every child of the stopped process to be gone", func() bool {
				for _, pid := range children {
					if alive(pid) {
						return false
					}
				}
				return true
			})
		})
	}
}

// marked starts sleep with env, in a session of its own when setsid, and
// kills it at cleanup.
func marked(t *testing.T, env []string, setsid bool) int {
	t.Helper()
	args := []string{"sleep", "600"}
	if setsid {
		args = append([]string{"setsid"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd.Process.Pid
}

func TestReapKillsTheRunsProcessesAndSparesTheRest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Reap reads Linux's /proc")
	}
	for _, tool := range []string{"sh", "setsid", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the test needs %s, which is not on PATH", tool)
		}
	}
	run, other := session.NewRun(), session.NewRun()
	env := func(run string) []string {
		return []string{"PATH=" + os.Getenv("PATH"), session.MarkerEnv + "=" + run + ":probe:1"}
	}
	// A marked process in a session of its own, with a child that cleared
	// its environment but stayed in the session: both go.
	dir := t.TempDir()
	leader := exec.Command("setsid", "sh", "-c", `env -i sleep 600 & echo $! > cleared; exec sleep 600`)
	leader.Dir, leader.Env = dir, env(run)
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	go leader.Wait()
	t.Cleanup(func() { _ = leader.Process.Kill() })
	var cleared int
	waitFor(t, "the cleared child's pid", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "cleared"))
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		cleared = n
		return err == nil
	})
	kill := map[string]int{
		"marked":                             marked(t, env(run), false),
		"marked, in its own session":         leader.Process.Pid,
		"cleared, in a marked one's session": cleared,
	}
	detached := marked(t, env(run), true)
	spare := map[string]int{
		"another run's":   marked(t, env(other), false),
		"unmarked":        marked(t, []string{"PATH=" + os.Getenv("PATH")}, false),
		"detached":        detached,
		"cleared, alone":  marked(t, []string{}, true),
		"the test itself": os.Getpid(),
	}
	killed, err := session.Reap(run, func(pid int) bool { return pid == detached })
	if err != nil {
		t.Fatal(err)
	}
	for what, pid := range kill {
		if !slices.Contains(killed, pid) {
			t.Errorf("the %s process (pid %d) was not reaped; reaped %v", what, pid, killed)
		}
		waitFor(t, "the "+what+" process to be gone", func() bool { return !alive(pid) })
	}
	for what, pid := range spare {
		if slices.Contains(killed, pid) || !alive(pid) {
			t.Errorf("the %s process (pid %d) was reaped", what, pid)
		}
	}
}
