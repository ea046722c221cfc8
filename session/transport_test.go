package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/session"
)

// loadManifest reads a package directory's manifest.
func loadManifest(t testing.TB, dir string) *protocol.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, protocol.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.ParseAndValidateManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type started struct {
	s    *session.Session
	host *memhost.Host
	log  string
}

// startTransport starts the transport extension as a real subprocess with
// an in-memory host service.
func startTransport(t testing.TB, edit func(*session.Options)) started {
	t.Helper()
	host := memhost.New(transport.Name)
	state := t.TempDir()
	opts := session.Options{
		StateDir: filepath.Join(state, "extensions", transport.Name),
		LogPath:  filepath.Join(state, "logs", "extensions", transport.Name+".log"),
		Host:     host.Table(),
		HostInfo: protocol.HostInfo{Name: "open-conduit-test", Version: "0"},
		// A loaded machine may take long to start a process; the tests
		// that need the handshake timeout set their own.
		HandshakeTimeout: slowHandshake,
	}
	if edit != nil {
		edit(&opts)
	}
	s, err := session.Start(context.Background(), session.Package{Dir: transportDir, Manifest: loadManifest(t, transportDir)}, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return started{s: s, host: host, log: opts.LogPath}
}

// call calls a transport operation and decodes its output.
func call[Out any](ctx context.Context, s *session.Session, op string, in any) (Out, error) {
	var out Out
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	var res protocol.OperationCallResult
	err = s.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: op,
		Input:     protocol.Payload{Data: jsontext.Value(data)},
		RequestID: "req-" + op,
	}, &res)
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(res.Output.Data, &out)
}

// TestTransportCompatibility is the transport compatibility list,
// against a real subprocess built on the SDK.
func TestTransportCompatibility(t *testing.T) {
	ctx := context.Background()

	t.Run("handshake_and_manifest", func(t *testing.T) {
		st := startTransport(t, nil)
		status := st.s.Status()
		if status.State != session.StateRunning || status.Protocol != 1 || status.PID == 0 {
			t.Fatalf("status %+v", status)
		}
		if !st.s.Manifest().SemanticallyEqual(loadManifest(t, transportDir)) {
			t.Fatal("manifest differs")
		}
	})

	t.Run("version_mismatch_refused", func(t *testing.T) {
		_, err := session.Start(ctx, session.Package{Dir: transportDir, Manifest: loadManifest(t, transportDir)},
			session.Options{Versions: []int{99}, HandshakeTimeout: slowHandshake})
		if !errors.Is(err, protocol.ErrUnsupportedProtocolVersion) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("manifest_mismatch_refused", func(t *testing.T) {
		m := loadManifest(t, transportDir)
		m.Version = "9.9.9"
		_, err := session.Start(ctx, session.Package{Dir: transportDir, Manifest: m}, session.Options{HandshakeTimeout: slowHandshake})
		if !errors.Is(err, protocol.ErrManifestMismatch) || !strings.Contains(err.Error(), "version") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("sequential_echoes", func(t *testing.T) {
		st := startTransport(t, nil)
		for i := 0; i < 2000; i++ {
			want := fmt.Sprintf("echo %d", i)
			got, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: want})
			if err != nil || got.Text != want {
				t.Fatalf("echo %d: %q %v", i, got.Text, err)
			}
		}
	})

	t.Run("concurrent_echoes", func(t *testing.T) {
		st := startTransport(t, nil)
		var wg sync.WaitGroup
		errs := make(chan error, 32*50)
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					want := fmt.Sprintf("worker %d call %d", w, i)
					got, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: want})
					if err != nil {
						errs <- err
					} else if got.Text != want {
						errs <- fmt.Errorf("answer %q matched to call %q", got.Text, want)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("structured_errors_and_unknown_method", func(t *testing.T) {
		st := startTransport(t, nil)
		_, err := call[transport.Empty](ctx, st.s, "transport.fail", transport.Failure{Code: "quota_exceeded", Message: "the quota of 5 calls is spent; wait an hour"})
		if protocol.CodeOf(err) != "quota_exceeded" || err.Error() != "the quota of 5 calls is spent; wait an hour" {
			t.Fatalf("structured error: %v", err)
		}
		_, err = call[transport.Empty](ctx, st.s, "transport.fail", transport.Failure{Code: protocol.CodeConflict, Message: "stale"})
		if !errors.Is(err, protocol.ErrConflict) {
			t.Fatalf("sentinel error: %v", err)
		}
		// ingress.push is enabled by the manifest's ingress type but not
		// served by this extension: a distinct code from any authored one.
		err = st.s.Call(ctx, "ingress.push", map[string]any{}, nil)
		if !errors.Is(err, protocol.ErrMethodNotFound) {
			t.Fatalf("unknown method: %v", err)
		}
	})

	t.Run("nested_callbacks", func(t *testing.T) {
		st := startTransport(t, nil)
		got, err := call[transport.Count](ctx, st.s, "transport.nested", transport.Count{N: 1000})
		if err != nil || got.N != 1000 {
			t.Fatalf("nested: %+v %v", got, err)
		}
	})

	t.Run("chunked_artifact_16MiB", func(t *testing.T) {
		st := startTransport(t, nil)
		const size = 16 << 20
		got, err := call[transport.Uploaded](ctx, st.s, "transport.upload", transport.Upload{Bytes: size, Chunk: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(transport.Pattern(size))
		if got.Size != size || got.Chunks != 64 || got.Digest != hex.EncodeToString(sum[:]) {
			t.Fatalf("upload %+v", got)
		}
		art := st.host.Artifacts()[got.Artifact]
		if !art.Committed || art.Chunks != 64 || !bytes.Equal(art.Data, transport.Pattern(size)) {
			t.Fatalf("host got %d chunks, %d bytes, committed %v", art.Chunks, len(art.Data), art.Committed)
		}
	})

	t.Run("extension_initiated_request", func(t *testing.T) {
		st := startTransport(t, nil)
		if _, err := call[transport.Empty](ctx, st.s, "transport.push", transport.Text{Text: "delivery-1"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the extension's own delivery", func() bool {
			d := st.host.Deliveries()
			return len(d) == 1 && d[0].DeliveryID == "delivery-1" && string(d[0].Body) == "delivery-1"
		})
	})

	t.Run("cancellation_reaches_handler", func(t *testing.T) {
		st := startTransport(t, nil)
		// The handler waits until cancelled, so only the caller's deadline
		// can end the call.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := call[transport.Empty](cctx, st.s, "transport.wait", transport.Text{Text: "seen"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("caller: %v", err)
		}
		waitFor(t, "the handler to see its cancellation", func() bool {
			return string(st.host.KV(transport.Name)["cancelled"]) == "seen"
		})
	})

	t.Run("stray_stdout", func(t *testing.T) {
		st := startTransport(t, nil)
		if _, err := call[transport.Empty](ctx, st.s, "transport.print", transport.Text{Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		got, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: "still intact"})
		if err != nil || got.Text != "still intact" {
			t.Fatalf("after stray stdout: %q %v", got.Text, err)
		}
		if st.s.Status().Restarts != 0 {
			t.Fatal("stray stdout broke the connection")
		}
		waitFor(t, "stray output in the log", func() bool {
			log, _ := os.ReadFile(st.log)
			return bytes.Contains(log, []byte("stray stdout from the handler: hello")) &&
				bytes.Contains(log, []byte("stray stdout from a child process")) &&
				bytes.Contains(log, []byte(`"id":999999`))
		})
	})

	t.Run("crash_mid_call", func(t *testing.T) {
		// No restart is due within the test, so the session stays down
		// until the operator restarts it.
		st := startTransport(t, func(o *session.Options) { o.Backoff.Min = time.Hour })
		_, err := call[transport.Empty](ctx, st.s, "transport.crash", transport.Count{N: 3})
		if !errors.Is(err, protocol.ErrTransport) {
			t.Fatalf("crash mid-call: %v", err)
		}
		// A call while the process is down, its restart an hour away,
		// fails unavailable at once, with why: it does not wait for the
		// restart, however long its own deadline.
		waitFor(t, "the crash to be noticed", func() bool { return st.s.Status().State == session.StateRestarting })
		patient, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = call[transport.Text](patient, st.s, "transport.echo", transport.Text{Text: "x"})
		cancel()
		if !errors.Is(err, protocol.ErrUnavailable) || !strings.Contains(err.Error(), "exited with status 3") ||
			!strings.Contains(err.Error(), "next start is due in") || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call while down: %v", err)
		}
		status := st.s.Status()
		if status.Restarts != 1 || status.Code != protocol.CodeTransport || !strings.Contains(status.LastError, "crashing on purpose") ||
			time.Until(status.NextRestart) < 30*time.Minute {
			t.Fatalf("status %+v", status)
		}
		if err := st.s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: "back"})
		if err != nil || got.Text != "back" {
			t.Fatalf("after restart: %q %v", got.Text, err)
		}
	})

	t.Run("restarted_after_crash", func(t *testing.T) {
		st := startTransport(t, nil)
		before := st.s.Status().PID
		if _, err := call[transport.Empty](ctx, st.s, "transport.crash", transport.Count{N: 3}); !errors.Is(err, protocol.ErrTransport) {
			t.Fatalf("crash mid-call: %v", err)
		}
		waitFor(t, "the restart", func() bool {
			status := st.s.Status()
			return status.State == session.StateRunning && status.PID != before
		})
		got, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: "back"})
		if err != nil || got.Text != "back" {
			t.Fatalf("after restart: %q %v", got.Text, err)
		}
		if status := st.s.Status(); status.Restarts != 1 || !strings.Contains(status.LastError, "crashing on purpose") {
			t.Fatalf("status %+v", status)
		}
	})
}

// slowHandshake is the handshake timeout of tests whose process may be slow
// to start on a loaded machine: long enough never to be what ends a test.
const slowHandshake = 10 * time.Minute

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid is a live process; a zombie waiting to be
// reaped by init counts as gone.
func alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
