package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeDaemon serves status on a real socket in dir and counts the
// connections it accepted.
func fakeDaemon(t *testing.T, dir string) (socket string, accepted *atomic.Int32) {
	t.Helper()
	socket = SocketPath(dir)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int32{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"phase":"running","generation":99}`))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return socket, accepted
}

// TestClientRefusesASocketItCannotTrust: a socket another user owns, a
// symbolic link to a socket and a plain file are refused before anything
// is sent, saying why; the client's own socket is used.
func TestClientRefusesASocketItCannotTrust(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, state string) *atomic.Int32
		says  string
	}{
		{"a socket another user owns", func(t *testing.T, state string) *atomic.Int32 {
			socket, accepted := fakeDaemon(t, state)
			if err := os.Lchown(socket, 65534, 65534); err != nil {
				t.Skipf("giving the socket to another user needs root (chown): %v", err)
			}
			return accepted
		}, "owned by user 65534"},
		{"a symbolic link to a socket", func(t *testing.T, state string) *atomic.Int32 {
			real := t.TempDir()
			socket, accepted := fakeDaemon(t, real)
			if err := os.Symlink(socket, SocketPath(state)); err != nil {
				t.Fatal(err)
			}
			return accepted
		}, "is a symbolic link, not a socket"},
		{"a plain file", func(t *testing.T, state string) *atomic.Int32 {
			if err := os.WriteFile(SocketPath(state), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return &atomic.Int32{}
		}, "is a plain file, not a socket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			accepted := tc.plant(t, state)
			_, err := New(state).Status(context.Background())
			if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), SocketPath(state)) {
				t.Fatalf("Status: %v; want the untrusted socket refused, saying %q", err, tc.says)
			}
			if errors.Is(err, ErrNoDaemon) {
				t.Errorf("an untrusted socket reported as no daemon: %v", err)
			}
			if n := accepted.Load(); n != 0 {
				t.Errorf("the client connected %d time(s) before refusing", n)
			}
		})
	}
	// Negative control: the client's own socket answers, and no socket at
	// all is no daemon.
	state := t.TempDir()
	_, accepted := fakeDaemon(t, state)
	if st, err := New(state).Status(context.Background()); err != nil || st.Generation != 99 || accepted.Load() != 1 {
		t.Fatalf("the client's own socket: %+v %v (%d connections)", st, err, accepted.Load())
	}
	if _, err := New(filepath.Join(t.TempDir(), "none")).Status(context.Background()); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("no socket: %v", err)
	}
}
