package drills

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// stateOther is the user id the drills give planted files to: neither the
// drill's own nor root's.
const stateOther = 65534

// stateGiveAway hands path to another user, or skips the row: only root
// can.
func stateGiveAway(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, stateOther, stateOther); err != nil {
		t.Skipf("giving %s to another user needs root (chown): %v", path, err)
	}
}

// stateServeFails runs serve on e's state and config expecting it to
// refuse the start, and returns what it printed. A serve that starts
// instead is stopped at the deadline and fails the drill.
func stateServeFails(t *testing.T, e *daemontest.Env) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemontest.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Bins.OpenConduit, "serve", "--state", e.State, "--config", e.Config)
	cmd.Env = append(os.Environ(), daemontest.Secrets...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("serve should have refused the start, but ran (%v):\n%s", err, out)
	}
	return string(out)
}

// TestDrillStateOthersCouldChangeIsRefused plants what another local user
// could: the state directory created first (with a link into the store
// and a socket of their own), a directory anyone may write, a symbolic
// link where the store, the logs or the socket go. serve refuses each
// before it opens anything, naming the path and what to change, and never
// writes through the link.
func TestDrillStateOthersCouldChangeIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant breaks e and returns a directory the daemon must leave
		// empty (the target of a planted link), or "".
		plant func(t *testing.T, e *daemontest.Env) string
		says  []string
	}{
		{"a state directory another user created first", func(t *testing.T, e *daemontest.Env) string {
			stateMkdir(t, e.State, 0o755)
			theirs := t.TempDir()
			if err := os.Symlink(theirs, filepath.Join(e.State, "store")); err != nil {
				t.Fatal(err)
			}
			stateGiveAway(t, e.State)
			return theirs
		}, []string{"is owned by user 65534", "--state"}},
		{"a state directory others may write", func(t *testing.T, e *daemontest.Env) string {
			stateMkdir(t, e.State, 0o777)
			return ""
		}, []string{"chmod go-w"}},
		{"a shared parent others may write, not sticky", func(t *testing.T, e *daemontest.Env) string {
			shared := filepath.Join(filepath.Dir(e.State), "shared")
			stateMkdir(t, shared, 0o777)
			e.State = filepath.Join(shared, "state")
			return ""
		}, []string{"on the way to the state directory", "chmod go-w"}},
		{"a config directory others may write", func(t *testing.T, e *daemontest.Env) string {
			stateMkdir(t, filepath.Dir(e.Config), 0o777)
			return ""
		}, []string{"config directory", "chmod go-w"}},
		{"an installed packages' directory others may write", func(t *testing.T, e *daemontest.Env) string {
			stateMkdir(t, filepath.Dir(e.ProbeDir()), 0o777)
			return ""
		}, []string{"extensions", "chmod go-w"}},
		{"a link where the store goes", func(t *testing.T, e *daemontest.Env) string {
			return statePlantLink(t, e, "store")
		}, []string{"store is a symbolic link"}},
		{"a link where the logs go", func(t *testing.T, e *daemontest.Env) string {
			return statePlantLink(t, e, "logs")
		}, []string{"logs is a symbolic link"}},
		{"a link where the socket goes", func(t *testing.T, e *daemontest.Env) string {
			return statePlantLink(t, e, client.SocketName)
		}, []string{client.SocketName + " is a symbolic link"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			target := tc.plant(t, e)
			out := stateServeFails(t, e)
			for _, want := range tc.says {
				if !strings.Contains(out, want) {
					t.Errorf("serve's refusal does not say %q:\n%s", want, out)
				}
			}
			if target != "" {
				if entries, _ := os.ReadDir(target); len(entries) > 0 {
					t.Errorf("serve wrote through the planted link into %s: %v", target, entries)
				}
			}
		})
	}
	// Negative control: the same Env, untouched, starts.
	e := daemontest.New(t, bins)
	e.Start()
}

// statePlantLink makes e's state directory the daemon's own and plants a
// link at name in it, to a directory it returns.
func statePlantLink(t *testing.T, e *daemontest.Env, name string) string {
	t.Helper()
	stateMkdir(t, e.State, 0o700)
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(e.State, name)); err != nil {
		t.Fatal(err)
	}
	return target
}

// TestDrillStateFilesAreOwnerOnly runs serve as the README does (a
// relative --state in a fresh directory, and the XDG defaults in
// directories that do not exist yet), under an operator's umask of 000,
// and checks that everything it created is the operator's alone: no
// group or other permission anywhere, no link, the daemon's own umask
// owner-only (so the socket was owner-only from the moment it existed).
func TestDrillStateFilesAreOwnerOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		// args and env run serve; state is the state directory it uses,
		// and made the directories serve must create.
		run func(t *testing.T, e *daemontest.Env) (args, env []string, dir, state string, made []string)
	}{
		{"--state state, relative, in a fresh directory", func(t *testing.T, e *daemontest.Env) ([]string, []string, string, string, []string) {
			cwd := t.TempDir()
			return []string{"--state", "state", "--config", e.Config}, nil, cwd, filepath.Join(cwd, "state"), nil
		}},
		{"the XDG defaults, directories not made yet", func(t *testing.T, e *daemontest.Env) ([]string, []string, string, string, []string) {
			root := stateShortTempDir(t)
			xdg := filepath.Join(root, "xdg", "state")
			env := []string{"XDG_STATE_HOME=" + xdg, "XDG_CONFIG_HOME=" + filepath.Join(root, "no-config"), client.StateEnv + "="}
			return nil, env, root, filepath.Join(xdg, "open-conduit"), []string{filepath.Join(root, "xdg"), xdg}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			args, env, dir, state, made := tc.run(t, e)
			cmd, exited := stateServeUnderUmask000(t, dir, env, args...)
			c := client.New(state)
			e.Eventually("serve running on "+state, func() bool {
				select {
				case <-exited:
					t.Fatalf("serve exited: %v", cmd.ProcessState)
				default:
				}
				st, err := c.Status(context.Background())
				return err == nil && st.Phase == client.PhaseRunning && st.PID == cmd.Process.Pid
			})
			if umask, ok := stateUmaskOf(cmd.Process.Pid); !ok {
				t.Log("this kernel does not show a process's umask in /proc; the files below stand for it")
			} else if umask != "0077" {
				t.Errorf("serve runs under umask %s, so a socket or store file it creates is not owner-only from the start", umask)
			}
			for _, d := range append(made, state) {
				stateOwnerOnly(t, d)
			}
			n := 0
			err := filepath.WalkDir(state, func(path string, _ fs.DirEntry, err error) error {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // the store removed a file it no longer needs
				}
				if err != nil || path == state {
					return err
				}
				if rel, _ := filepath.Rel(state, path); strings.HasPrefix(rel, "extensions"+string(filepath.Separator)) && strings.Count(rel, string(filepath.Separator)) > 1 {
					return nil // a package's own files are its own
				}
				n++
				stateOwnerOnly(t, path)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			report(t, "%s: %d files and directories in the state directory, each owned by the daemon's user with no group or other permission", tc.name, n)
		})
	}
}

// stateServeUnderUmask000 starts serve in dir with env added, under a
// umask of 000, and stops it in cleanup; exited is closed when it ends.
func stateServeUnderUmask000(t *testing.T, dir string, env []string, args ...string) (cmd *exec.Cmd, exited <-chan struct{}) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("setting the operator's umask needs sh: %v", err)
	}
	cmd = exec.Command(sh, append([]string{"-c", `umask 000 && exec "$0" serve "$@"`, bins.OpenConduit}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), daemontest.Secrets...), env...)
	log := &daemontest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("serve's log:\n%s", log)
		}
	})
	return cmd, done
}

// stateShortTempDir is a temporary directory with a short path, so a
// socket a few levels below it stays within the 108 bytes a socket's path
// may have.
func stateShortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "oc-drill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// stateUmaskOf reads a process's umask from /proc.
func stateUmaskOf(pid int) (string, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// stateOwnerOnly fails the drill unless path is the drill's user's, no
// link, with no permission for its group or others.
func stateOwnerOnly(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return // the store removed a file it no longer needs
	}
	if err != nil {
		t.Error(err)
		return
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t.Errorf("%s is a symbolic link", path)
	case st != nil && int(st.Uid) != os.Getuid():
		t.Errorf("%s is owned by user %d", path, st.Uid)
	case fi.Mode().Perm()&0o077 != 0:
		t.Errorf("%s has mode %v: its group or others may use it", path, fi.Mode())
	}
}

// TestDrillClientRefusesAPlantedSocket replays the impostor: another user
// created the state directory first and listens on its socket, answering
// "applied generation 99". config apply, status and extension list refuse
// it before sending anything, saying why; a plain file there is refused
// as no socket. The impostor is never connected to.
func TestDrillClientRefusesAPlantedSocket(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "config.json")
	if err := os.WriteFile(cfg, []byte(daemontest.HelloOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, state string) *atomic.Int32
		says  string
	}{
		{"an impostor's socket in a state directory it created", func(t *testing.T, state string) *atomic.Int32 {
			accepted := stateImpostor(t, state)
			stateGiveAway(t, client.SocketPath(state))
			stateGiveAway(t, state)
			return accepted
		}, "is owned by user 65534"},
		{"a plain file where the socket goes", func(t *testing.T, state string) *atomic.Int32 {
			if err := os.WriteFile(client.SocketPath(state), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return &atomic.Int32{}
		}, "is a plain file, not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			stateMkdir(t, state, 0o755)
			accepted := tc.plant(t, state)
			for _, args := range [][]string{
				{"config", "apply", "--config", cfg},
				{"status"},
			} {
				out, err := exec.Command(bins.OpenConduit, append(args, "--state", state)...).CombinedOutput()
				if err == nil || strings.Contains(string(out), "applied generation 99") || !strings.Contains(string(out), tc.says) ||
					!strings.Contains(string(out), "nothing was sent") {
					t.Errorf("%v: %v\n%s", args, err, out)
				}
			}
			if n := accepted.Load(); n != 0 {
				t.Errorf("the CLI connected to the planted socket %d time(s)", n)
			}
		})
	}
	// Negative control: the impostor's socket left the operator's own, the
	// CLI talks to it, so the rows above prove the refusal.
	state := filepath.Join(t.TempDir(), "state")
	stateMkdir(t, state, 0o700)
	accepted := stateImpostor(t, state)
	out, err := exec.Command(bins.OpenConduit, "config", "apply", "--config", cfg, "--state", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "applied generation 99") || accepted.Load() == 0 {
		t.Fatalf("the operator's own socket: %v\n%s", err, out)
	}
}

// stateImpostor listens on state's socket and answers every request as an
// applied config, generation 99; it counts the connections it accepts.
func stateImpostor(t *testing.T, state string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", client.SocketPath(state))
	if err != nil {
		t.Fatal(err)
	}
	accepted := &atomic.Int32{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"applied": true, "generation": 99, "hash": "0000000000000099", "phase": "running"}`))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		},
		ReadHeaderTimeout: time.Minute,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return accepted
}

// stateMkdir makes dir (and its parents) and gives it mode.
func stateMkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
