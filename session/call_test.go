package session_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// TestCallToAnExtensionThatIsNotRunningFailsUnavailable: a call never
// waits for a restart that is not due soon, nor longer than RestartWait,
// and never answers what the extension did not.
func TestCallToAnExtensionThatIsNotRunningFailsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		// down brings the session to the state the call meets.
		down func(t *testing.T) *session.Session
		// serves: the call waits for the restart and is answered.
		serves bool
		says   string
	}{
		{"stopped", func(t *testing.T) *session.Session {
			st := startTransport(t, nil)
			if err := st.s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			return st.s
		}, false, "(stopped)"},
		{"restart_an_hour_away", func(t *testing.T) *session.Session {
			st := startTransport(t, func(o *session.Options) { o.Backoff.Min = time.Hour })
			crash(t, st.s)
			return st.s
		}, false, "next start is due in"},
		{"refused", func(t *testing.T) *session.Session {
			w := wrapTransport(t, "")
			w.ready(t)
			w.pkg.Manifest.Version = "0.0.0-not-the-binary"
			s := newSession(t, w.pkg, nil)
			if err := s.Start(context.Background()); !errors.Is(err, protocol.ErrManifestMismatch) {
				t.Fatalf("start: %v", err)
			}
			return s
		}, false, "(refused)"},
		{"start_that_does_not_finish", func(t *testing.T) *session.Session {
			// The script never answers initialize: the start is under way
			// for as long as the test lasts.
			w := wrapTransport(t, "sleep 600\n")
			s := newSession(t, w.pkg, func(o *session.Options) { o.RestartWait = 300 * time.Millisecond })
			go s.Start(context.Background())
			waitFor(t, "the launch", func() bool { return len(w.pids(t, "launch")) > 0 })
			return s
		}, false, "waited 300ms for its start"},
		{"restart_due_at_once", func(t *testing.T) *session.Session {
			st := startTransport(t, func(o *session.Options) {
				o.Backoff.Min = 50 * time.Millisecond
				// However loaded the machine, the restart comes within it.
				o.RestartWait = time.Minute
			})
			crash(t, st.s)
			return st.s
		}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.down(t)
			// The caller would wait a minute; the session must not.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			got, err := call[transport.Text](ctx, s, "transport.echo", transport.Text{Text: "x"})
			if tc.serves {
				if err != nil || got.Text != "x" {
					t.Fatalf("a call meeting a restart due at once: %q %v", got.Text, err)
				}
				return
			}
			if !errors.Is(err, protocol.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %q %v, want unavailable saying %q", got.Text, err, tc.says)
			}
		})
	}
}

// crash has the transport extension exit mid-call and waits until the
// session knows.
func crash(t *testing.T, s *session.Session) {
	t.Helper()
	if _, err := call[transport.Empty](context.Background(), s, "transport.crash", transport.Count{N: 3}); !errors.Is(err, protocol.ErrTransport) {
		t.Fatalf("crash mid-call: %v", err)
	}
	waitFor(t, "the crash to be noticed", func() bool { return s.Status().State != session.StateRunning })
}

func TestStderrFloodIsDroppedAndCountedInTheLog(t *testing.T) {
	if _, err := exec.LookPath("seq"); err != nil {
		t.Skip("the flooding script numbers its lines with seq, which is not on PATH")
	}
	log := filepath.Join(t.TempDir(), "flood.log")
	// 20,000 lines in writes of 1,000, each over the 100 a second: most
	// are dropped and counted; the process's last lines still reach the
	// crash report.
	w := wrapTransport(t, `i=0; while [ $i -lt 20 ]; do
  printf 'flood %d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n' $(seq $((i*1000)) $((i*1000+999))) >&2
  i=$((i+1))
done
echo 'the last words' >&2
exit 7
`)
	s := newSession(t, w.pkg, func(o *session.Options) {
		o.LogPath = log
		o.LogRate = session.LogRate{Lines: 100, Bytes: 1 << 20}
	})
	err := s.Start(context.Background())
	if !errors.Is(err, protocol.ErrHandshakeFailed) || !strings.Contains(err.Error(), "the last words") {
		t.Fatalf("start: %v", err)
	}
	data, rerr := os.ReadFile(log)
	if rerr != nil {
		t.Fatal(rerr)
	}
	text := string(data)
	kept := strings.Count(text, "\nflood ") + strings.Count(text[:min(len(text), 6)], "flood ")
	if !strings.Contains(text, "[open-conduit] dropped ") || !strings.Contains(text, "over the log's rate of 100 lines") {
		t.Fatalf("no count of the dropped lines in the log:\n%.2000s", text)
	}
	if kept >= 20000 || kept == 0 {
		t.Fatalf("the log kept %d of 20000 flood lines", kept)
	}
	if !strings.Contains(text, "the last words") {
		t.Fatalf("the crash report with the last lines is not in the log")
	}
}
