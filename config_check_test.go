package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestConfigCheckShowsABindingTheRouteHandlerRefuses: config check starts
// the installed probe for validate alone; its route handler refuses the
// binding its route binds when the binding's config sets probe_refuse, and
// the check fails naming binding_refused at the route's binding.
func TestConfigCheckShowsABindingTheRouteHandlerRefuses(t *testing.T) {
	dir := t.TempDir()
	probeDir := filepath.Join(dir, "cfg", "extensions", probe.Name)
	if err := os.MkdirAll(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(probeDir, "probe-extension")
	if out, err := exec.Command("go", "build", "-o", exe, "./fixtures/probe/cmd/probe-extension").CombinedOutput(); err != nil {
		t.Fatalf("go build the probe: %v\n%s", err, out)
	}
	manifest, err := exec.Command(exe, "package-manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(probeDir, protocol.ManifestFile), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		bindingConfig string
		code          int
		want          []string
	}{
		{"a binding the handler refuses", `{"` + probe.Refuse + `": true}`, 1,
			[]string{"error /scopes/0/routes/0/binding: line 2", "route handler " + probe.RouteHandler + ` (package probe) refuses binding "b"`,
				"sets " + probe.Refuse, "(binding_refused)", "1 error(s)"}},
		{"negative control: a binding it accepts", `{"model": "m"}`, 0, []string{"is valid"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := `{"scopes": [{"id": "s",
  "routes": [{"handler": "` + probe.RouteHandler + `", "binding": "b"}],
  "bindings": [{"name": "b", "config": ` + tc.bindingConfig + `}]}]}`
			if err := os.WriteFile(filepath.Join(dir, "cfg", "config.json"), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := result(t, command(t, dir, "config", "check", "--config", "cfg/config.json"))
			all := out + errs
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output does not say %q:\n%s", w, all)
				}
			}
		})
	}
}
