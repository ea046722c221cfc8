package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

// checkSecret stands for a value no finding may print: it sits in an
// operation case's input and a field's default.
const checkSecret = "tok-check-9d41"

// writeFiles lays out files (relative path → text) under dir; a path
// ending in -extension is written executable.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for rel, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, "-extension") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkPackage is a package named acme: good as given; broken, it has an
// incompatible protocol, a playbook naming an undeclared operation, an
// empty playbooks directory's sibling file and a fixture case for an
// undeclared operation.
func checkPackage(t *testing.T, broken, certification bool) string {
	t.Helper()
	protocols, playbook := "[1]", "Call `acme.greet`.\n"
	fixture := `{"fixture": {"operations": [{"operation": "acme.greet", "input": {"name": "Ada"}}]}}`
	if broken {
		protocols, playbook = "[9]", "Call `acme.greet`, then `acme.vanish`.\n"
		fixture = `{"fixture": {"operations": [{"operation": "acme.gone", "input": {"token": "` + checkSecret + `"}}]}}`
	}
	files := map[string]string{
		protocol.ManifestFile: `{"name": "acme", "protocol": ` + protocols + `, "command": ["acme-extension"],
			"playbooks": "playbooks", "permissions": ["config.read"],
			"provides": {"extensions": [{"type": "acme", "fields": [{"name": "region", "default": "` + checkSecret + `"}]}],
				"operations": [{"name": "acme.greet", "kind": "handler", "summary": "greets"}]}}`,
		"acme-extension":    "#!/bin/sh\nexec true\n",
		"playbooks/acme.md": playbook,
	}
	if certification {
		files[protocol.CertificationFileName] = fixture
	}
	return writeFiles(t, filepath.Join(t.TempDir(), "acme"), files)
}

// TestExtensionCheckAndInspectThroughTheBinary: every finding printed with
// its remedy, exit 1 on an error and 0 on warnings alone, the report as
// JSON, and no value from the package in any output.
func TestExtensionCheckAndInspectThroughTheBinary(t *testing.T) {
	broken, warned, good := checkPackage(t, true, true), checkPackage(t, false, false), checkPackage(t, false, true)
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		lines []string
	}{
		{"check: every error, exit 1", []string{"extension", "check", broken}, 1, []string{
			"error incompatible_protocol at open-conduit-extension.json#/protocol:",
			"error unknown_operation at playbooks/acme.md:1:", "error fixture_missing_case at certification.json#/fixture/operations/0/operation:",
			"  remedy: ", "acme: fails, 3 error(s), 0 warning(s)"}},
		{"check: warnings only, exit 0", []string{"extension", "check", warned}, 0, []string{
			"warning no_certification at certification.json:", "acme: ok, 0 error(s), 1 warning(s)"}},
		{"check: clean, exit 0", []string{"extension", "check", good}, 0, []string{"acme: ok, 0 error(s), 0 warning(s)"}},
		{"check: --allow admits a name", []string{"extension", "check", "--allow", "acme.vanish,acme.other", broken}, 1, []string{
			"acme: fails, 2 error(s), 0 warning(s)"}},
		{"check: not a directory, exit 1", []string{"extension", "check", filepath.Join(good, "nowhere")}, 1, []string{
			"error invalid_package at .:"}},
		{"inspect: what it is", []string{"extension", "inspect", good}, 0, []string{
			"operation", "acme.greet", "config.read: " + protocol.PermissionMeaning[protocol.PermissionConfigRead], "acme: ok"}},
		{"inspect: layout errors, exit 1", []string{"extension", "inspect", broken}, 1, []string{
			"error incompatible_protocol at open-conduit-extension.json#/protocol:", "acme: fails, 1 error(s), 0 warning(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := result(t, command(t, t.TempDir(), tc.args...))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			for _, l := range tc.lines {
				if !strings.Contains(out, l) {
					t.Errorf("stdout lacks %q:\n%s", l, out)
				}
			}
			if tc.code != 0 && strings.Count(errs, "\n") != 1 {
				t.Errorf("a failure prints one line on stderr, got %q", errs)
			}
			if strings.Contains(out+errs, checkSecret) {
				t.Errorf("the output prints a value from the package:\n%s%s", out, errs)
			}
		})
	}

	t.Run("check --json prints the report", func(t *testing.T) {
		code, out, _ := result(t, command(t, t.TempDir(), "extension", "check", "--json", broken))
		var rep packages.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		want := []string{protocol.CodeIncompatibleProtocol, protocol.CodeUnknownOperation, protocol.CodeFixtureMissingCase}
		if rep.Name != "acme" || rep.Errors != 3 || rep.Warnings != 0 || !slices.Equal(rep.Codes(), want) {
			t.Fatalf("report %+v, want codes %q", rep, want)
		}
		for _, f := range rep.Findings {
			if f.Severity != packages.SeverityError || f.Path == "" || f.Message == "" || f.Remedy == "" {
				t.Errorf("finding %+v lacks a part", f)
			}
		}
		code, out, _ = result(t, command(t, t.TempDir(), "extension", "check", "--json", good))
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Findings) != 0 || !strings.Contains(out, `"findings": []`) {
			t.Fatalf("a clean package: exit %d, %v:\n%s", code, err, out)
		}
	})

	t.Run("inspect --json prints the inspection", func(t *testing.T) {
		code, out, _ := result(t, command(t, t.TempDir(), "extension", "inspect", "--json", good))
		var in packages.Inspection
		if err := json.Unmarshal([]byte(out), &in); err != nil || code != 0 {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if in.Manifest == nil || in.Manifest.Name != "acme" || len(in.Permissions) != 1 || in.Permissions[0].Allows == "" || len(in.Provides) != 2 {
			t.Fatalf("inspection %s", out)
		}
	})

	t.Run("misuse exits 2", func(t *testing.T) {
		if code, _, errs := result(t, command(t, t.TempDir(), "extension", "check")); code != 2 || !strings.Contains(errs, "usage: open-conduit extension check DIR") {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
	})
}

// TestFirstPartyPackagesPassCheck lays out every package this binary
// serves as a directory (its manifest and certification fixture as the
// binary prints them) and checks each passes extension check with no
// finding at all; a copy whose fixture names an undeclared operation is
// the negative control.
func TestFirstPartyPackagesPassCheck(t *testing.T) {
	names, err := exec.Command(bin, "extension-run").Output()
	if err != nil || len(strings.Fields(string(names))) == 0 {
		t.Fatalf("extension-run lists no served package: %v", err)
	}
	for _, name := range strings.Fields(string(names)) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			files := map[string]string{}
			for file, sub := range map[string]string{protocol.ManifestFile: "package-manifest", protocol.CertificationFileName: "package-certification"} {
				out, err := exec.Command(bin, "extension-run", name, sub).Output()
				if err != nil {
					t.Fatalf("extension-run %s %s: %v", name, sub, err)
				}
				files[file] = string(out)
			}
			writeFiles(t, dir, files)
			code, out, errs := result(t, command(t, t.TempDir(), "extension", "check", dir))
			if code != 0 || !strings.Contains(out, name+": ok, 0 error(s), 0 warning(s)") {
				t.Fatalf("exit %d:\n%s%s", code, out, errs)
			}

			writeFiles(t, dir, map[string]string{protocol.CertificationFileName: `{"fixture": {"operations": [{"operation": "` + name + `.never"}]}}`})
			code, out, _ = result(t, command(t, t.TempDir(), "extension", "check", dir))
			if code != 1 || !strings.Contains(out, "error "+protocol.CodeFixtureMissingCase) {
				t.Fatalf("a fixture naming an undeclared operation passed: exit %d:\n%s", code, out)
			}
		})
	}
}
