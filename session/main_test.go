package session_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// transportDir is a package directory holding the transport extension,
// built once for the whole test binary.
var transportDir string

func TestMain(m *testing.M) {
	if os.Getenv(hostModeEnv) != "" {
		runAsHost()
		return
	}
	root, err := os.MkdirTemp("", "oc-session-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildTransport(root); err != nil {
		fmt.Fprintln(os.Stderr, "building the transport extension:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(root)
	os.Exit(code)
}

// buildTransport builds fixtures/transport into root/transport with its
// manifest beside it, as a package directory.
func buildTransport(root string) error {
	transportDir = filepath.Join(root, "transport")
	if err := os.MkdirAll(transportDir, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(transportDir, "transport-extension")
	build := exec.Command("go", "build", "-o", bin, "github.com/open-conduit/open-conduit/fixtures/transport/cmd/transport-extension")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build (the tests need the go command): %w", err)
	}
	out, err := exec.Command(bin, "package-manifest").Output()
	if err != nil {
		return fmt.Errorf("package-manifest: %w", err)
	}
	return os.WriteFile(filepath.Join(transportDir, "open-conduit-extension.json"), out, 0o644)
}
