package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/session"
)

// wrapped is the transport extension behind a shell script of the same
// name, in a package directory of its own. The script records each launch
// in the file "launches" and runs the real extension once the file
// "ready" exists; until then it runs the body the test gives it.
type wrapped struct {
	pkg session.Package
	dir string
}

func wrapTransport(t *testing.T, body string) wrapped {
	t.Helper()
	dir := filepath.Join(t.TempDir(), transport.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"launch $$\" >> launches\nif [ -f ready ]; then exec '%s' \"$@\"; fi\n%s",
		filepath.Join(transportDir, "transport-extension"), body)
	if err := os.WriteFile(filepath.Join(dir, "transport-extension"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapped{pkg: session.Package{Dir: dir, Manifest: loadManifest(t, transportDir)}, dir: dir}
}

// ready makes every later launch run the real extension.
func (w wrapped) ready(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pids returns the pids recorded under kind ("launch" or "child"), in order.
func (w wrapped) pids(t testing.TB, kind string) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dir, "launches"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, kind+" "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("launches: %q", line)
			}
			out = append(out, pid)
		}
	}
	return out
}

// newSession prepares a session for pkg with an in-memory host and a
// handshake timeout no loaded machine reaches; Close runs at cleanup.
func newSession(t *testing.T, pkg session.Package, edit func(*session.Options)) *session.Session {
	t.Helper()
	opts := session.Options{
		Host:             memhost.New(pkg.Manifest.Name).Table(),
		HandshakeTimeout: slowHandshake,
		ShutdownGrace:    time.Second,
	}
	if edit != nil {
		edit(&opts)
	}
	s, err := session.New(pkg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func echoes(t *testing.T, s *session.Session, text string) {
	t.Helper()
	got, err := call[transport.Text](context.Background(), s, "transport.echo", transport.Text{Text: text})
	if err != nil || got.Text != text {
		t.Fatalf("echo %q: %q %v", text, got.Text, err)
	}
}

const notReady = "echo 'not ready: the file ready is missing' >&2\nexit 1\n"

func TestFailedFirstStartIsRetriedInTheBackground(t *testing.T) {
	w := wrapTransport(t, notReady)
	s := newSession(t, w.pkg, func(o *session.Options) {
		o.Backoff = session.Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	})
	err := s.Start(context.Background())
	if !errors.Is(err, protocol.ErrHandshakeFailed) || !strings.Contains(err.Error(), "not ready: the file ready is missing") {
		t.Fatalf("start: %v", err)
	}
	status := s.Status()
	if status.State != session.StateRestarting || status.Code != protocol.CodeHandshakeFailed || status.NextRestart.IsZero() {
		t.Fatalf("after a failed first start: %+v", status)
	}
	// Negative control: while the cause stays, the retries keep failing.
	waitFor(t, "two retries", func() bool { return len(w.pids(t, "launch")) >= 3 })
	if status := s.Status(); status.State != session.StateRestarting || status.Code != protocol.CodeHandshakeFailed {
		t.Fatalf("retrying without the cause fixed: %+v", status)
	}
	w.ready(t)
	waitFor(t, "the session to run by itself", func() bool { return s.Status().State == session.StateRunning })
	echoes(t, s, "started in the background")
	if status := s.Status(); status.Restarts != 0 || !status.NextRestart.IsZero() {
		t.Fatalf("a failed start is not a crash: %+v", status)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("a second Start must be refused: Restart starts again")
	}
}

// mismatchedManifest answers initialize with a manifest that is not the
// package's: a deterministic refusal.
const mismatchedManifest = `read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocol_version":1,"manifest":{"name":"transport","protocol":[1],"command":["transport-extension"]}}}'
exec cat >/dev/null
`

func TestDeterministicRefusalIsNotRetried(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		ready    bool
		versions []int
		code     string
	}{
		{name: "manifest_mismatch", body: mismatchedManifest, code: protocol.CodeManifestMismatch},
		{name: "unsupported_protocol_version", ready: true, versions: []int{99}, code: protocol.CodeUnsupportedProtocolVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := wrapTransport(t, tc.body)
			if tc.ready {
				w.ready(t)
			}
			s := newSession(t, w.pkg, func(o *session.Options) {
				o.Versions = tc.versions
				o.Backoff = session.Backoff{Min: time.Millisecond, Max: time.Millisecond}
			})
			err := s.Start(context.Background())
			if protocol.CodeOf(err) != tc.code {
				t.Fatalf("start: %v", err)
			}
			status := s.Status()
			if status.State != session.StateRefused || status.Code != tc.code || !status.NextRestart.IsZero() {
				t.Fatalf("after a refusal: %+v", status)
			}
			// An absence can only be watched over a window. This one is
			// 500 backoffs long; a loaded machine can make it pass wrongly,
			// never fail wrongly.
			select {
			case <-s.Changed():
				t.Fatalf("the state changed after a refusal: %+v", s.Status())
			case <-time.After(500 * time.Millisecond):
			}
			if n := len(w.pids(t, "launch")); n != 1 {
				t.Fatalf("%d launches, want 1", n)
			}
		})
	}
}

func TestRestartStartsANewProcess(t *testing.T) {
	ctx := context.Background()

	t.Run("running", func(t *testing.T) {
		st := startTransport(t, nil)
		child, err := call[transport.PID](ctx, st.s, "transport.spawn", transport.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		before := st.s.Status().PID
		if err := st.s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		status := st.s.Status()
		if status.State != session.StateRunning || status.PID == before || status.PID == 0 {
			t.Fatalf("after restart: %+v (pid before %d)", status, before)
		}
		waitFor(t, "the old process and its child to be gone", func() bool { return !alive(before) && !alive(child.PID) })
		echoes(t, st.s, "served by the new process")
		if status.Restarts != 0 || status.LastError != "" {
			t.Fatalf("an operator restart is not a crash: %+v", status)
		}
	})

	t.Run("failed", func(t *testing.T) {
		w := wrapTransport(t, notReady)
		// No retry is due within the test: only Restart starts it again.
		s := newSession(t, w.pkg, func(o *session.Options) { o.Backoff.Min = time.Hour })
		if err := s.Start(ctx); !errors.Is(err, protocol.ErrHandshakeFailed) {
			t.Fatalf("start: %v", err)
		}
		if next := s.Status().NextRestart; time.Until(next) < 30*time.Minute {
			t.Fatalf("next restart %v, want about an hour away", next)
		}
		// Negative control: with the cause still there, Restart fails the
		// same way and leaves the retries scheduled.
		if err := s.Restart(ctx); !errors.Is(err, protocol.ErrHandshakeFailed) {
			t.Fatalf("restart before the fix: %v", err)
		}
		if status := s.Status(); status.State != session.StateRestarting || status.Code != protocol.CodeHandshakeFailed {
			t.Fatalf("after a failed restart: %+v", status)
		}
		w.ready(t)
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		echoes(t, s, "fixed")
		if status := s.Status(); status.State != session.StateRunning || !status.NextRestart.IsZero() || status.Restarts != 0 {
			t.Fatalf("after the restart: %+v", status)
		}
	})

	t.Run("refused", func(t *testing.T) {
		w := wrapTransport(t, mismatchedManifest)
		s := newSession(t, w.pkg, nil)
		if err := s.Start(ctx); !errors.Is(err, protocol.ErrManifestMismatch) {
			t.Fatalf("start: %v", err)
		}
		w.ready(t)
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		echoes(t, s, "no longer refused")
		if launches := w.pids(t, "launch"); len(launches) != 2 || s.Status().PID != launches[1] {
			t.Fatalf("launches %v, status %+v", launches, s.Status())
		}
	})
}

// hangsAfterFirst fails the first launch; every later one hangs in its
// handshake with a child in its process group, so a launch is in progress
// until something ends it.
const hangsAfterFirst = `if [ "$(grep -c launch launches)" -eq 1 ]; then exit 1; fi
sleep 600 &
echo "child $!" >> launches
wait
`

func TestCloseDuringALaunchLeavesNoProcessBehind(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		backoff time.Duration
		restart bool
	}{
		{name: "background_retry", backoff: 10 * time.Millisecond},
		{name: "restart", backoff: time.Hour, restart: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := wrapTransport(t, hangsAfterFirst)
			s := newSession(t, w.pkg, func(o *session.Options) { o.Backoff.Min = tc.backoff })
			if err := s.Start(ctx); !errors.Is(err, protocol.ErrHandshakeFailed) {
				t.Fatalf("start: %v", err)
			}
			restarted := make(chan error, 1)
			if tc.restart {
				go func() { restarted <- s.Restart(ctx) }()
			}
			waitFor(t, "a launch hanging in its handshake", func() bool {
				launches, children := w.pids(t, "launch"), w.pids(t, "child")
				return len(launches) >= 2 && len(children) >= 1 && alive(launches[len(launches)-1]) && alive(children[len(children)-1])
			})
			closed := make(chan error, 1)
			go func() { closed <- s.Close(ctx) }()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Close did not end the launch in progress")
			}
			if tc.restart {
				if err := <-restarted; err == nil {
					t.Fatal("the restart Close interrupted reported success")
				}
			}
			pids := append(w.pids(t, "launch"), w.pids(t, "child")...)
			waitFor(t, "every launched process and child to be gone", func() bool {
				for _, pid := range pids {
					if alive(pid) {
						return false
					}
				}
				return true
			})
			if status := s.Status(); status.State != session.StateStopped || status.PID != 0 {
				t.Fatalf("after close: %+v", status)
			}
			if err := s.Restart(ctx); !errors.Is(err, protocol.ErrUnavailable) {
				t.Fatalf("restart after close: %v", err)
			}
		})
	}
}
