package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

func TestToolbeltFromEnvNamesTheMissingVariable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		missing string
	}{
		{"nothing set", nil, protocol.EnvToolbelt},
		{"token only", map[string]string{protocol.EnvToken: "t"}, protocol.EnvToolbelt},
		{"socket only", map[string]string{protocol.EnvToolbelt: "/s.sock"}, protocol.EnvToken},
		{"both", map[string]string{protocol.EnvToolbelt: "/s.sock", protocol.EnvToken: "t"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := ToolbeltFromEnv(func(k string) string { return tc.env[k] })
			if tc.missing == "" {
				if err != nil || tb.Socket() != "/s.sock" {
					t.Fatalf("%v, %v", tb, err)
				}
				return
			}
			if !errors.Is(err, ErrNoToolbelt) || !strings.Contains(err.Error(), "$"+tc.missing+" is") {
				t.Fatalf("%v; want ErrNoToolbelt naming $%s", err, tc.missing)
			}
		})
	}
}

func TestToolbeltRefusesAPathThatIsNotASocketWithoutSending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolbelt.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, id, err := NewToolbelt(path, "secret-token").Call(context.Background(), ToolbeltRequest{Operation: "read_context"})
	if !errors.Is(err, ErrUntrustedSocket) || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("%v; want ErrUntrustedSocket without the token", err)
	}
	if id == "" {
		t.Fatal("the call was given no request ID")
	}
}

func TestNewRequestIDIsFreshAndPrintable(t *testing.T) {
	re := regexp.MustCompile(`^rq_[a-z2-7]{26}$`)
	a, b := NewRequestID(), NewRequestID()
	if a == b || !re.MatchString(a) || !re.MatchString(b) || len(a) > MaxToolbeltRequestID {
		t.Fatalf("%q %q", a, b)
	}
}
