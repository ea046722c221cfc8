package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestApplyRefusesObjectsOfAPackageThatCouldNotStart installs a package
// whose command exits at once: the daemon runs without it, and a config
// that names its type is refused with the package's name and why, not as
// an unknown type.
func TestApplyRefusesObjectsOfAPackageThatCouldNotStart(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("the broken package is a shell script and there is no sh")
	}
	e := daemontest.New(t, bins)
	broken := &protocol.Manifest{Name: "broken", Protocol: []int{1}, Command: []string{"broken-extension"},
		Provides: protocol.Provides{Extensions: []protocol.ExtensionType{{Type: "broken"}}}}
	data, err := broken.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(e.Config), "extensions", "broken")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken-extension"), []byte("#!/bin/sh\necho 'no such luck' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.Start()
	if x := e.Extension("broken"); x.State == "running" {
		t.Fatalf("broken runs: %+v", x)
	}

	with := strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "b", "type": "broken"}]},`, 1)
	res, err := e.C.ApplyConfig(context.Background(), []byte(with))
	if err != nil || res.Applied {
		t.Fatalf("a config naming the broken package: %+v %v", res, err)
	}
	found := false
	for _, p := range res.Problems {
		if p.Code == "unknown_type" {
			t.Errorf("the broken package's type is reported unknown: %+v", p)
		}
		if strings.HasPrefix(p.Path, "/scopes/0/entries/0/") && p.Code == "extension_unavailable" && strings.Contains(p.Message, "broken") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no extension_unavailable naming broken: %+v", res.Problems)
	}
	// Negative control: the same daemon applies a config that does not
	// name it.
	if res, err := e.C.ApplyConfig(context.Background(), []byte(daemontest.Config)); err != nil || !(res.Applied || res.Unchanged) {
		t.Fatalf("a config without it: %+v %v", res, err)
	}
}
