package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/session"
)

func TestCallInTxRefusesCallbacksAndEnforcesDeadline(t *testing.T) {
	st := startTransport(t, nil)
	ctx := context.Background()
	var got map[string]string
	if err := st.s.CallInTx(ctx, "recurrence.next", transport.Recurrence{Kind: "transport.daily", Mode: "callback"}, &got); err != nil {
		t.Fatal(err)
	}
	if got["code"] != protocol.CodeReentrantCall {
		t.Fatalf("a callback during an in-transaction call answered %q, want reentrant_call", got["code"])
	}
	// Negative control: outside the in-transaction call the same callback is served.
	code, err := call[transport.Code](ctx, st.s, "transport.call", transport.Method{Method: protocol.MethodKVGet})
	if err != nil || code.Code == protocol.CodeReentrantCall {
		t.Fatalf("callback outside a transaction: %+v %v", code, err)
	}
	// The handler overruns the 250 ms deadline; only the deadline can end
	// the call with DeadlineExceeded.
	err = st.s.CallInTx(ctx, "recurrence.next", transport.Recurrence{Kind: "transport.daily", Mode: "sleep"}, &got)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("overrunning in-transaction call: %v", err)
	}
	if err := st.s.Call(ctx, "recurrence.next", nil, nil); err == nil {
		t.Fatal("an in-transaction method must go through CallInTx")
	}
}

func TestCallbacksOutsideTheManifestAreRefused(t *testing.T) {
	st := startTransport(t, nil)
	ctx := context.Background()
	cases := []struct{ method, code string }{
		// Gated by a permission the manifest does not declare.
		{"telemetry.capture", protocol.CodeUndeclared},
		// Enabled (the manifest declares recurrences) and served: the
		// service itself refuses a cancel naming no timer.
		{"timer.cancel", protocol.CodeInvalid},
		// Enabled by a surface the manifest does not declare (work kinds).
		{"work.cancel", protocol.CodeUndeclared},
		// Catalogued, enabled, not served by this host yet.
		{"state.works", protocol.CodeUnsupported},
		// A host-to-extension method sent to the host.
		{"route.match", protocol.CodeMethodNotFound},
		// Not a method at all.
		{"no.such.method", protocol.CodeMethodNotFound},
		// Served.
		{protocol.MethodKVList, protocol.CodeInvalidParams},
	}
	for _, tc := range cases {
		want := tc.code
		got, err := call[transport.Code](ctx, st.s, "transport.call", transport.Method{Method: tc.method})
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if tc.method == protocol.MethodKVList {
			// kv.list with no namespace is refused by the service itself,
			// which proves the call got past the gate.
			if got.Code != protocol.CodeUnauthorized {
				t.Errorf("%s: got %q (%s)", tc.method, got.Code, got.Message)
			}
			continue
		}
		if got.Code != want {
			t.Errorf("%s: got %q (%s), want %q", tc.method, got.Code, got.Message, want)
		}
	}
}

func TestMethodsTheManifestDoesNotEnableAreNeverSent(t *testing.T) {
	st := startTransport(t, nil)
	// route.match: the transport manifest declares no route handler. Had it
	// been sent, the SDK would answer method_not_found.
	err := st.s.Call(context.Background(), "route.match", map[string]any{}, nil)
	if !errors.Is(err, protocol.ErrUndeclared) {
		t.Fatalf("got %v", err)
	}
	if err := st.s.Call(context.Background(), protocol.MethodKVGet, nil, nil); err == nil {
		t.Fatal("an extension-to-host method cannot be sent to an extension")
	}
	// The check remembers the last method it passed: an enabled call in
	// between changes nothing for the refused ones, before or after it.
	if _, err := call[transport.Text](context.Background(), st.s, "transport.echo", transport.Text{Text: "x"}); err != nil {
		t.Fatalf("an enabled call: %v", err)
	}
	if err := st.s.Call(context.Background(), "route.match", map[string]any{}, nil); !errors.Is(err, protocol.ErrUndeclared) {
		t.Fatalf("route.match after an enabled call: got %v", err)
	}
	if err := st.s.CallInTx(context.Background(), protocol.MethodOperationCall, nil, nil); err == nil {
		t.Fatal("operation.call went through CallInTx, which takes only in-transaction methods")
	}
}

func TestCloseLeavesNoProcessBehind(t *testing.T) {
	st := startTransport(t, nil)
	ctx := context.Background()
	child, err := call[transport.PID](ctx, st.s, "transport.spawn", transport.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	pid := st.s.Status().PID
	if !alive(pid) || !alive(child.PID) {
		t.Fatal("processes not running before close")
	}
	if err := st.s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the extension and its child to be gone", func() bool { return !alive(pid) && !alive(child.PID) })
	if st.s.Status().State != session.StateStopped {
		t.Fatalf("state %s", st.s.Status().State)
	}
	if err := st.s.Call(ctx, protocol.MethodOperationCall, nil, nil); !errors.Is(err, protocol.ErrUnavailable) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestEnvironmentIsSanitized(t *testing.T) {
	environ := append(os.Environ(), "OC_TEST_SECRET=hunter2", "OC_TEST_GRANTED=yes", "LC_TEST_LOCALE=x")
	st := startTransport(t, func(o *session.Options) {
		o.Environ = environ
		o.PassEnv = []string{"OC_TEST_GRANTED", "OC_TEST_UNSET"}
	})
	got, err := call[transport.Names](context.Background(), st.s, "transport.env", transport.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Names, "OC_TEST_SECRET") {
		t.Fatal("an ungranted variable reached the extension")
	}
	if !slices.Contains(got.Names, "OC_TEST_GRANTED") || !slices.Contains(got.Names, "LC_TEST_LOCALE") || !slices.Contains(got.Names, "PATH") {
		t.Fatalf("environment %v", got.Names)
	}
	for _, n := range got.Names {
		if !allowedEnv(n) {
			t.Errorf("%s is not in the baseline nor granted", n)
		}
	}
	status := st.s.Status()
	if !slices.Equal(status.GrantedEnv, []string{"OC_TEST_GRANTED"}) || !slices.Equal(status.MissingEnv, []string{"OC_TEST_UNSET"}) {
		t.Fatalf("status %+v", status)
	}
}

func allowedEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM", "GORACE", "OC_TEST_GRANTED", session.MarkerEnv:
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// scriptPackage writes a package whose command is a shell script.
func scriptPackage(t *testing.T, script string) session.Package {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "broken")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, "broken-extension"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return session.Package{Dir: dir, Manifest: &protocol.Manifest{Name: "broken", Protocol: []int{1}, Command: []string{"broken-extension"}}}
}

func TestStartFailureSaysWhatToDo(t *testing.T) {
	_, err := session.Start(context.Background(), scriptPackage(t, ""), session.Options{})
	if !errors.Is(err, protocol.ErrStartFailed) || !strings.Contains(err.Error(), "broken-extension") || !strings.Contains(err.Error(), "executable") {
		t.Fatalf("got %v", err)
	}
}

func TestHandshakeFailureQuotesStatusAndStderr(t *testing.T) {
	log := filepath.Join(t.TempDir(), "broken.log")
	pkg := scriptPackage(t, "echo 'loading config' >&2\necho 'fatal: API_URL is not set' >&2\nexit 3\n")
	_, err := session.Start(context.Background(), pkg, session.Options{LogPath: log, HandshakeTimeout: slowHandshake})
	if !errors.Is(err, protocol.ErrHandshakeFailed) {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"initialize", "exited with status 3", "fatal: API_URL is not set", "broken-extension", log} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
}

func TestHandshakeTimeoutIsHandshakeFailed(t *testing.T) {
	// The script never answers, so only the (deliberately short) timeout
	// ends the handshake.
	pkg := scriptPackage(t, "sleep 600\n")
	_, err := session.Start(context.Background(), pkg, session.Options{HandshakeTimeout: 300 * time.Millisecond, ShutdownGrace: 200 * time.Millisecond})
	if !errors.Is(err, protocol.ErrHandshakeFailed) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("got %v", err)
	}
}

func TestGarbageOnStdoutIsAProtocolErrorAndRestarts(t *testing.T) {
	// The script speaks no protocol: its first line is not JSON.
	// Only the protocol error can end this handshake: the script sleeps
	// far longer than the test may take, and the timeout is longer still.
	pkg := scriptPackage(t, "echo 'Starting server on port 8080'\nsleep 600\n")
	_, err := session.Start(context.Background(), pkg, session.Options{HandshakeTimeout: slowHandshake})
	if !errors.Is(err, protocol.ErrHandshakeFailed) || !strings.Contains(err.Error(), "Starting server on port 8080") ||
		!strings.Contains(err.Error(), "not a JSON-RPC message") {
		t.Fatalf("got %v", err)
	}
}

func TestStderrLogIsBounded(t *testing.T) {
	log := filepath.Join(t.TempDir(), "broken.log")
	// A shell loop is slow on a loaded machine: the handshake waits for
	// its exit, however long it takes, not for a timeout.
	pkg := scriptPackage(t, "pad=$(printf '%0500d' 0); i=0; while [ $i -lt 3000 ]; do echo \"line $i $pad\" >&2; i=$((i+1)); done; exit 1\n")
	_, err := session.Start(context.Background(), pkg, session.Options{LogPath: log, LogLimit: 64 << 10, HandshakeTimeout: slowHandshake})
	if !errors.Is(err, protocol.ErrHandshakeFailed) {
		t.Fatalf("got %v", err)
	}
	data, rerr := os.ReadFile(log)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(data) > 64<<10 {
		t.Fatalf("log is %d bytes, over its 64 KiB bound", len(data))
	}
	if !strings.Contains(string(data), "truncated") || !strings.Contains(string(data), "line 2999") {
		t.Fatalf("log must keep the newest output after a truncation marker:\n%.300s", data)
	}
}

// The host-crash test runs the test binary again as a host.
const hostModeEnv = "OC_SESSION_TEST_HOST"

// runAsHost starts the transport extension, prints its pid and waits to be
// killed.
func runAsHost() {
	data, _ := os.ReadFile(filepath.Join(os.Getenv(hostModeEnv), protocol.ManifestFile))
	m, err := protocol.ParseAndValidateManifest(data)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s, err := session.Start(context.Background(), session.Package{Dir: os.Getenv(hostModeEnv), Manifest: m},
		session.Options{Host: memhost.New(m.Name).Table(), HandshakeTimeout: slowHandshake})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pid", s.Status().PID)
	select {}
}

func TestHostCrashLeavesNoOrphan(t *testing.T) {
	host := exec.Command(os.Args[0])
	host.Env = append(os.Environ(), hostModeEnv+"="+transportDir)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		host.Process.Kill()
		t.Fatalf("host said %q: %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if !alive(pid) {
		t.Fatal("extension not running")
	}
	_ = host.Process.Signal(syscall.SIGKILL)
	_ = host.Wait()
	waitFor(t, "the orphaned extension to exit", func() bool { return !alive(pid) })
}
