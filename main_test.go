package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// binary builds open-conduit once for this test binary.
func binary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "open-conduit")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinaryEndToEnd runs the real binary: the demo starts the bundled
// extension as a process (the binary itself, as extension-run), and
// extension-run prints a manifest protocol validates.
func TestBinaryEndToEnd(t *testing.T) {
	bin := binary(t)

	out, err := exec.Command(bin, "extension-run", "hello", "package-manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.ParseAndValidateManifest(out); err != nil {
		t.Fatalf("extension-run hello package-manifest: %v\n%s", err, out)
	}

	state := t.TempDir()
	demo := exec.Command(bin, "demo", "--state", state, "--name", "ada", "--name", "ada")
	got, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, got)
	}
	for _, want := range []string{
		`"greeting":"Hello, ada!","count":1`,
		`"greeting":"Hello, ada!","count":2`,
		"refused bad_request",
		"ok: 1 names greeted, 0 heartbeats sent",
		"hello.greetings/ada = 2",
		"exited",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
	log, err := os.ReadFile(filepath.Join(state, "logs", "extensions", "hello.log"))
	if err != nil || !strings.Contains(string(log), "extension-run hello") {
		t.Fatalf("the extension's log: %v\n%s", err, log)
	}

	// config check starts hello for validate alone: a config it refuses is
	// an error at the object's path; one it accepts passes.
	cfgDir := t.TempDir()
	bad := filepath.Join(cfgDir, "bad.json")
	os.WriteFile(bad, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greting":"hi"}}]}]}`), 0o644)
	out, err = exec.Command(bin, "config", "check", "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "/scopes/0/entries/0/config") || !strings.Contains(string(out), "invalid_config") {
		t.Fatalf("config check of a config hello refuses: %v\n%s", err, out)
	}
	good := filepath.Join(cfgDir, "good.json")
	os.WriteFile(good, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greeting":"hi"}}]}]}`), 0o644)
	if out, err := exec.Command(bin, "config", "check", "--config", good).CombinedOutput(); err != nil {
		t.Fatalf("config check of a good config: %v\n%s", err, out)
	}
}
