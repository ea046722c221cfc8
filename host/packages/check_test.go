package packages

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
)

// baseManifest is a package that passes every check: an ingress type, a
// family, a handler and a wait operation, a permission and playbooks.
const baseManifest = `{"name": "acme", "version": "0.1.0", "protocol": [1], "command": ["acme-extension"],
	"playbooks": "playbooks", "permissions": ["config.read"],
	"provides": {"extensions": [{"type": "acme", "ingress": true, "families": ["acme.pushed"]}],
		"families": [{"name": "acme.pushed", "loss": "a missed push is not sent again"}],
		"schemas": [{"base": "acme.pushed", "versions": [1]}],
		"operations": [{"name": "acme.greet", "kind": "handler", "input": {"type": "object"}}, {"name": "acme.wait", "kind": "wait"}]}}`

const baseCertification = `{"fixture": {"operations": [{"operation": "acme.greet", "input": {"name": "Ada"}}],
	"ingress": [{"type": "acme", "config": {}, "delivery": {"id": "d1"}, "family": "acme.pushed"}]}}`

const basePlaybook = "# Greeting\n\nCall `acme.greet`, then wait with \"acme.wait\"; events are `acme.pushed` (`acme.pushed.v1`).\n" +
	"Other names are left alone: `config.json`, `github.issue`, \"settings.extensions\", `read_context`.\n"

// pkg is a package directory's files, by path relative to it; a file
// named in exec is written executable.
type pkg struct {
	dir      string
	manifest map[string]any
	files    map[string]string
	exec     map[string]bool
}

func basePackage() *pkg {
	var m map[string]any
	if err := json.Unmarshal([]byte(baseManifest), &m); err != nil {
		panic(err)
	}
	return &pkg{dir: "acme", manifest: m,
		files: map[string]string{
			"acme-extension":      "#!/bin/sh\nexec true\n",
			"playbooks/acme.md":   basePlaybook,
			"playbooks/notes.txt": "`acme.nothing` in a file that is not a playbook\n",
			"certification.json":  baseCertification,
		},
		exec: map[string]bool{"acme-extension": true}}
}

// provides is the manifest's provides object, to mutate.
func (p *pkg) provides() map[string]any { return p.manifest["provides"].(map[string]any) }

// write lays the package out under root and returns its directory.
func (p *pkg) write(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, p.dir)
	files := map[string]string{}
	for k, v := range p.files {
		files[k] = v
	}
	if p.manifest != nil {
		b, err := json.Marshal(p.manifest)
		if err != nil {
			t.Fatal(err)
		}
		files[protocol.ManifestFile] = string(b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if p.exec[rel] {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// foreignELF is the header of an ELF executable for an architecture this
// host is not, enough for the platform check to read.
func foreignELF() string {
	machine := uint16(183) // EM_AARCH64
	if runtime.GOARCH == "arm64" {
		machine = 62 // EM_X86_64
	}
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	binary.LittleEndian.PutUint16(h[16:], 2)
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64)
	return string(h)
}

// secret stands for a value no finding may repeat: it is put where an
// author could paste one (an input, a field default, an entry's config).
const secret = "s3cr3t-do-not-print"

func TestCheckReportsEachBrokenRuleWithItsCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *pkg)
		opts   CheckOptions
		// codes are the distinct codes the report must give, in order.
		codes []string
		// at is a path one finding must be at.
		at string
	}{
		{"a manifest rule broken: invalid_package", func(p *pkg) {
			p.provides()["operations"].([]any)[0].(map[string]any)["kind"] = "sometimes"
		}, CheckOptions{}, []string{protocol.CodeInvalidPackage}, "open-conduit-extension.json#/provides/operations/0/kind"},
		{"no manifest: invalid_package", func(p *pkg) { p.manifest = nil },
			CheckOptions{}, []string{protocol.CodeInvalidPackage}, protocol.ManifestFile},
		{"directory not named after the manifest: invalid_package", func(p *pkg) { p.dir = "acme-1.2" },
			CheckOptions{}, []string{protocol.CodeInvalidPackage}, "open-conduit-extension.json#/name"},
		{"command missing: invalid_package", func(p *pkg) { delete(p.files, "acme-extension") },
			CheckOptions{}, []string{protocol.CodeInvalidPackage}, "acme-extension"},
		{"command not executable: invalid_package", func(p *pkg) { p.exec = nil },
			CheckOptions{}, []string{protocol.CodeInvalidPackage}, "acme-extension"},
		{"playbooks directory missing: invalid_package", func(p *pkg) {
			delete(p.files, "playbooks/acme.md")
			delete(p.files, "playbooks/notes.txt")
		}, CheckOptions{}, []string{protocol.CodeInvalidPackage}, "playbooks"},
		{"no common protocol version: incompatible_protocol", func(p *pkg) { p.manifest["protocol"] = []any{99} },
			CheckOptions{}, []string{protocol.CodeIncompatibleProtocol}, "open-conduit-extension.json#/protocol"},
		{"a field from a newer release: needs_newer_host", func(p *pkg) { p.manifest["sidecars"] = []any{} },
			CheckOptions{}, []string{protocol.CodeNeedsNewerHost}, protocol.ManifestFile},
		{"a permission from a newer release: needs_newer_host", func(p *pkg) { p.manifest["permissions"] = []any{"time.travel"} },
			CheckOptions{}, []string{protocol.CodeNeedsNewerHost}, "open-conduit-extension.json#/permissions/0"},
		{"a binary for another architecture: wrong_platform", func(p *pkg) { p.files["acme-extension"] = foreignELF() },
			CheckOptions{}, []string{protocol.CodeWrongPlatform}, "acme-extension"},
		{"an executable no platform runs: wrong_platform", func(p *pkg) { p.files["acme-extension"] = "just words\n" },
			CheckOptions{}, []string{protocol.CodeWrongPlatform}, "acme-extension"},
		{"host-run but not served: not_served", func(p *pkg) {
			p.manifest["command"] = []any{"open-conduit", "extension-run", "acme"}
			delete(p.files, "acme-extension")
		}, CheckOptions{}, []string{protocol.CodeNotServed}, "open-conduit-extension.json#/command"},
		{"a name a package beside it registers: registration_conflict", func(*pkg) {},
			CheckOptions{Beside: []discover.Package{{Name: "other", Manifest: &protocol.Manifest{Name: "other",
				Provides: protocol.Provides{Families: []protocol.Family{{Name: "acme.pushed"}}}}}}},
			[]string{protocol.CodeRegistrationConflict}, protocol.ManifestFile},
		{"a name the host registers: registration_conflict", func(p *pkg) {
			p.provides()["routes"] = []any{map[string]any{"handler": "manual"}}
		}, CheckOptions{}, []string{protocol.CodeInvalidPackage, protocol.CodeRegistrationConflict}, protocol.ManifestFile},
		{"a playbook names an undeclared operation: unknown_operation", func(p *pkg) {
			p.files["playbooks/acme.md"] += "Then call `acme.frobnicate` and \"core.reboot\".\n"
		}, CheckOptions{}, []string{protocol.CodeUnknownOperation}, "playbooks/acme.md:5"},
		{"no <name>.md playbook: no_playbooks", func(p *pkg) { delete(p.files, "playbooks/acme.md") },
			CheckOptions{}, []string{protocol.CodeNoPlaybooks}, "playbooks"},
		{"no certification.json: no_certification", func(p *pkg) { delete(p.files, "certification.json") },
			CheckOptions{}, []string{protocol.CodeNoCertification}, "certification.json"},
		{"certification.json not JSON: invalid_certification", func(p *pkg) { p.files["certification.json"] = `{"fixture": {"operations": [` },
			CheckOptions{}, []string{protocol.CodeInvalidCertification}, "certification.json#/fixture/operations"},
		{"neither fixture nor command: invalid_certification", func(p *pkg) { p.files["certification.json"] = `{}` },
			CheckOptions{}, []string{protocol.CodeInvalidCertification}, "certification.json"},
		{"no ingress case for an ingress type: fixture_missing_case", func(p *pkg) {
			p.files["certification.json"] = `{"fixture": {"operations": [{"operation": "acme.greet"}]}}`
		}, CheckOptions{}, []string{protocol.CodeFixtureMissingCase}, "certification.json#/fixture/ingress"},
		{"a case for an undeclared or non-handler operation: fixture_missing_case", func(p *pkg) {
			p.files["certification.json"] = `{"fixture": {"operations": [{"operation": "acme.greet"}, {"operation": "acme.wait"},
				{"operation": "acme.gone", "input": {"token": "` + secret + `"}}], "ingress": [{"type": "acme"}]}}`
		}, CheckOptions{}, []string{protocol.CodeFixtureMissingCase}, "certification.json#/fixture/operations/2/operation"},
		{"an ingress case for a type without ingress: fixture_missing_case", func(p *pkg) {
			p.files["certification.json"] = `{"fixture": {"ingress": [{"type": "acme"}, {"type": "acme-other"}, {"type": "acme", "family": "acme.other"}]}}`
		}, CheckOptions{}, []string{protocol.CodeFixtureMissingCase}, "certification.json#/fixture/ingress/2/family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := basePackage()
			tc.mutate(p)
			rep := Check(p.write(t, t.TempDir()), tc.opts)
			if got := rep.Codes(); !slices.Equal(got, tc.codes) {
				t.Fatalf("codes %q, want %q; findings:\n%s", got, tc.codes, findingLines(rep))
			}
			if !slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Path == tc.at }) {
				t.Errorf("no finding at %s:\n%s", tc.at, findingLines(rep))
			}
			warningOnly := tc.codes[0] == protocol.CodeNoPlaybooks || tc.codes[0] == protocol.CodeNoCertification
			if rep.OK() != warningOnly {
				t.Errorf("OK() = %v with %d errors and %d warnings; only warnings pass", rep.OK(), rep.Errors, rep.Warnings)
			}
			for _, f := range rep.Findings {
				if f.Remedy == "" || f.Message == "" || f.Path == "" {
					t.Errorf("finding without its message, remedy or path: %+v", f)
				}
				if strings.Contains(f.Message+f.Remedy, secret) {
					t.Errorf("finding quotes a value from the package: %+v", f)
				}
			}
		})
	}
}

// TestCheckPassesAWellFormedPackage is the negative control of the table:
// the base package gives no finding at all, and --allow admits a name only
// when it is given.
func TestCheckPassesAWellFormedPackage(t *testing.T) {
	rep := Check(basePackage().write(t, t.TempDir()), CheckOptions{})
	if len(rep.Findings) != 0 || !rep.OK() || rep.Name != "acme" {
		t.Fatalf("the base package gives findings:\n%s", findingLines(rep))
	}
	p := basePackage()
	p.files["playbooks/setup.md"] = "Run the probe `acme.fs.list` first.\n"
	dir := p.write(t, t.TempDir())
	if rep := Check(dir, CheckOptions{}); !slices.Equal(rep.Codes(), []string{protocol.CodeUnknownOperation}) {
		t.Fatalf("an undeclared probe passed without --allow:\n%s", findingLines(rep))
	}
	if rep := Check(dir, CheckOptions{Allow: []string{"acme.fs.list"}}); len(rep.Findings) != 0 {
		t.Fatalf("--allow did not admit the probe:\n%s", findingLines(rep))
	}

	// A playbook linked from elsewhere in the package is a playbook:
	// install copies what the link points to.
	p = basePackage()
	p.files["docs/acme.md"] = p.files["playbooks/acme.md"]
	delete(p.files, "playbooks/acme.md")
	dir = p.write(t, t.TempDir())
	if err := os.Symlink(filepath.Join("..", "docs", "acme.md"), filepath.Join(dir, "playbooks", "acme.md")); err != nil {
		t.Fatal(err)
	}
	if rep := Check(dir, CheckOptions{}); len(rep.Findings) != 0 {
		t.Fatalf("a linked playbook is not counted:\n%s", findingLines(rep))
	}
}

// TestCheckReportsEveryProblemNotTheFirst breaks one package several ways
// and expects a finding for each, errors and warnings counted apart.
func TestCheckReportsEveryProblemNotTheFirst(t *testing.T) {
	p := basePackage()
	p.dir = "acme-wrong"
	p.manifest["protocol"] = []any{7}
	p.manifest["permissions"] = []any{"config.read", "config.read"}
	p.provides()["operations"].([]any)[0].(map[string]any)["kind"] = "sometimes"
	p.provides()["extensions"].([]any)[0].(map[string]any)["fields"] = []any{map[string]any{"name": "token", "default": secret, "secret": true}}
	p.exec = nil
	delete(p.files, "playbooks/acme.md")
	p.files["certification.json"] = `{"fixture": {"operations": [{"operation": "acme.none", "input": {"k": "` + secret + `"}}]}}`
	rep := Check(p.write(t, t.TempDir()), CheckOptions{})
	want := []string{protocol.CodeIncompatibleProtocol, protocol.CodeInvalidPackage, protocol.CodeNoPlaybooks, protocol.CodeFixtureMissingCase}
	if got := rep.Codes(); !slices.Equal(got, want) {
		t.Fatalf("codes %q, want %q:\n%s", got, want, findingLines(rep))
	}
	// protocol, duplicate permission, operation kind, field secret, name,
	// command; the playbooks warning; the undeclared case and the missing
	// ingress case.
	if rep.Errors != 8 || rep.Warnings != 1 || rep.OK() {
		t.Errorf("%d errors and %d warnings, want 8 and 1:\n%s", rep.Errors, rep.Warnings, findingLines(rep))
	}
	if strings.Contains(findingLines(rep), secret) {
		t.Errorf("a finding quotes a value from the package:\n%s", findingLines(rep))
	}
}

// TestCheckServedPackageReplacesTheServedOne: a host-run package this
// binary serves checks clean, its own served manifest is not a conflict, and
// a package of another name claiming a served name is.
func TestCheckServedPackageReplacesTheServedOne(t *testing.T) {
	p := basePackage()
	p.manifest["command"] = []any{"open-conduit", "extension-run", "acme"}
	delete(p.files, "acme-extension")
	dir := p.write(t, t.TempDir())
	m, err := protocol.ParseAndValidateManifest([]byte(baseManifest))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]*protocol.Manifest{"acme": m}
	if rep := Check(dir, CheckOptions{Served: served}); len(rep.Findings) != 0 {
		t.Fatalf("a served package conflicts with itself:\n%s", findingLines(rep))
	}
	other := *m
	other.Name = "acme-old"
	served = map[string]*protocol.Manifest{"acme-old": &other}
	rep := Check(dir, CheckOptions{Served: served})
	if !slices.Equal(rep.Codes(), []string{protocol.CodeNotServed, protocol.CodeRegistrationConflict}) {
		t.Fatalf("want not_served and the served package's names as conflicts:\n%s", findingLines(rep))
	}
}

func TestInspectShowsWhatThePackageIsAndItsLayout(t *testing.T) {
	in := Inspect(basePackage().write(t, t.TempDir()), CheckOptions{})
	if in.Manifest == nil || in.Manifest.Name != "acme" || in.HostRun || len(in.Report.Findings) != 0 {
		t.Fatalf("inspection %+v", in)
	}
	if len(in.Permissions) != 1 || in.Permissions[0].Allows != protocol.PermissionMeaning[protocol.PermissionConfigRead] {
		t.Errorf("permissions %+v, want config.read with what it allows", in.Permissions)
	}
	var kinds []string
	for _, pr := range in.Provides {
		kinds = append(kinds, pr.Kind+" "+pr.Name)
	}
	want := []string{"entry type acme", "family acme.pushed", "operation acme.greet", "operation acme.wait", "schema acme.pushed"}
	if !slices.Equal(kinds, want) {
		t.Errorf("provides %q, want %q", kinds, want)
	}

	// The layout's findings, and none of the lint's: the playbooks'
	// contents and the fixture are check's.
	p := basePackage()
	p.exec = nil
	p.files["playbooks/acme.md"] += "`acme.frobnicate`\n"
	delete(p.files, "certification.json")
	in = Inspect(p.write(t, t.TempDir()), CheckOptions{})
	if got := in.Report.Codes(); !slices.Equal(got, []string{protocol.CodeInvalidPackage}) || in.Report.OK() || in.Manifest == nil {
		t.Fatalf("inspect of a package with a non-executable command: %q\n%s", got, findingLines(in.Report))
	}
}

func findingLines(r Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}
