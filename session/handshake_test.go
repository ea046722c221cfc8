package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// handshakeTap records, in order, each handshake line a session writes (by
// method) and reads (as "answer").
type handshakeTap struct {
	mu    sync.Mutex
	lines []string
}

func (h *handshakeTap) Observe(outgoing bool, frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !outgoing:
		h.lines = append(h.lines, "answer")
	case strings.Contains(string(frame), `"method":"initialize"`):
		h.lines = append(h.lines, "initialize")
	case strings.Contains(string(frame), `"method":"configure"`):
		h.lines = append(h.lines, "configure")
	}
}

func (h *handshakeTap) first(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lines[:min(n, len(h.lines))])
}

// TestConfigureGoesOutBehindInitializeUnlessAMigrationIsDue: configure is
// written before initialize's answer is read, so a start is one round trip;
// a configure asking for a KV migration waits for initialize's answer.
func TestConfigureGoesOutBehindInitializeUnlessAMigrationIsDue(t *testing.T) {
	tests := []struct {
		name string
		kv   protocol.KVLayout
		want []string
	}{
		{"layout current", protocol.KVLayout{Stored: 1, Declared: 1}, []string{"initialize", "configure", "answer", "answer"}},
		{"migration due", protocol.KVLayout{Stored: 0, Declared: 1}, []string{"initialize", "answer", "configure", "answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tap := &handshakeTap{}
			pkg := session.Package{Dir: transportDir, Manifest: loadManifest(t, transportDir)}
			s := newSession(t, pkg, func(o *session.Options) {
				o.Observer = tap
				o.Configure = func() protocol.ConfigureParams { return protocol.ConfigureParams{KV: tt.kv} }
			})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := tap.first(4); !slices.Equal(got, tt.want) {
				t.Fatalf("the handshake's lines went %v, want %v", got, tt.want)
			}
			echoes(t, s, "after the handshake")
		})
	}
}

// TestConfigureRefusedNotInitializedIsSentAgain: an extension that serves
// requests concurrently may find configure before initialize is done and
// answer it not_initialized; the host sends configure again once
// initialize is answered, and the start succeeds. The extension here is a
// script that reads both requests before it answers either, which only a
// host that does not wait for initialize's answer lets it do.
func TestConfigureRefusedNotInitializedIsSentAgain(t *testing.T) {
	manifest := filepath.Join(transportDir, protocol.ManifestFile)
	body := fmt.Sprintf(`id() { printf '%%s\n' "$1" | sed -n 's/.*,"id":\([0-9]*\)}$/\1/p'; }
read -r init; read -r conf
printf '{"jsonrpc":"2.0","id":%%s,"error":{"code":-32000,"message":"not initialized","data":{"code":"not_initialized"}}}\n' "$(id "$conf")"
printf '{"jsonrpc":"2.0","id":%%s,"result":{"protocol_version":1,"manifest":%%s}}\n' "$(id "$init")" "$(tr -d '\n' < '%s')"
read -r again
case "$again" in *'"method":"configure"'*) echo "configure again" >> launches ;; esac
printf '{"jsonrpc":"2.0","id":%%s,"result":{}}\n' "$(id "$again")"
cat > /dev/null
`, manifest)
	w := wrapTransport(t, body)
	// A host that waited for initialize's answer would leave the script
	// waiting for configure: fail in a minute rather than the default ten.
	s := newSession(t, w.pkg, func(o *session.Options) { o.HandshakeTimeout = time.Minute })
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(w.dir, "launches"))
	if err != nil || !strings.Contains(string(data), "configure again") {
		t.Fatalf("the extension never saw configure sent again (%v):\n%s", err, data)
	}
}
