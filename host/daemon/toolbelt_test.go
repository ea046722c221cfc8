package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// The daemon serves the toolbelt on <state>/toolbelt.sock, owner-only,
// takes over the socket a killed daemon left, and removes it on a clean
// stop.
func TestToolbeltSocketIsOwnerOnlyAndSurvivesAKilledDaemon(t *testing.T) {
	e := daemontest.New(t, bins)
	sock := filepath.Join(e.State, "toolbelt.sock")
	answers := func() {
		t.Helper()
		fi, err := os.Lstat(sock)
		if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Fatalf("toolbelt socket: %v %v; want a 0600 socket", fi, err)
		}
		// A token no execution has is never served.
		_, _, err = client.NewToolbelt(sock, "no-such-token").Call(context.Background(),
			client.ToolbeltRequest{Operation: "read_context", RequestID: "rq-daemon"})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code == "" {
			t.Fatalf("a made-up token: %v; want the toolbelt's refusal", err)
		}
	}
	e.Start()
	answers()
	e.Kill()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("a killed daemon's socket should be left behind: %v", err)
	}
	e.Start()
	answers()
	e.Stop()
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after a clean stop the socket is %v; want it removed", err)
	}
}
