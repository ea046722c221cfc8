package discover

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

func manifest(name string, edit func(*protocol.Manifest)) *protocol.Manifest {
	m := &protocol.Manifest{Name: name, Version: "1.0.0", Protocol: []int{1}, Command: []string{name + "-extension"}}
	if edit != nil {
		edit(m)
	}
	return m
}

// writePkg lays out a package directory; exe makes its command.
func writePkg(t *testing.T, root, dir string, m *protocol.Manifest, exe bool) {
	t.Helper()
	p := filepath.Join(root, dir)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := m.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, protocol.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if exe {
		if err := os.WriteFile(filepath.Join(p, m.Command[0]), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func find(pkgs []Package, name string) (Package, bool) {
	for _, p := range pkgs {
		if p.Name == name {
			return p, true
		}
	}
	return Package{}, false
}

func TestInstalledReplacesBundledAndServed(t *testing.T) {
	installed, bundled := t.TempDir(), t.TempDir()
	writePkg(t, installed, "acme", manifest("acme", nil), true)
	writePkg(t, bundled, "acme", manifest("acme", func(m *protocol.Manifest) { m.Version = "0.1.0" }), true)
	writePkg(t, bundled, "tools", manifest("tools", nil), true)
	served := map[string]*protocol.Manifest{"hello": manifest("hello", func(m *protocol.Manifest) { m.Command = protocol.HostRunCommand("hello") })}
	pkgs, problems := Discover(Options{Installed: installed, Bundled: bundled, Served: served})
	if len(problems) != 0 {
		t.Fatalf("problems %v", problems)
	}
	acme, _ := find(pkgs, "acme")
	if acme.Source != Installed || acme.Manifest.Version != "1.0.0" || !acme.Replaces {
		t.Fatalf("acme %+v", acme)
	}
	if tools, ok := find(pkgs, "tools"); !ok || tools.Source != Bundled {
		t.Fatalf("tools %+v", tools)
	}
	if hello, ok := find(pkgs, "hello"); !ok || !hello.HostRun || hello.Source != Bundled {
		t.Fatalf("hello %+v", hello)
	}
	if len(pkgs) != 3 {
		t.Fatalf("%d packages", len(pkgs))
	}
}

func TestRefusedInstalledStillReplacesBundled(t *testing.T) {
	installed, bundled := t.TempDir(), t.TempDir()
	// A field this host does not know: the package needs a newer Open Conduit.
	dir := filepath.Join(installed, "acme")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, protocol.ManifestFile), []byte(`{"name":"acme","protocol":[1],"command":["acme-extension"],"future":true}`), 0o644)
	writePkg(t, bundled, "acme", manifest("acme", nil), true)
	pkgs, problems := Discover(Options{Installed: installed, Bundled: bundled})
	if _, ok := find(pkgs, "acme"); ok {
		t.Fatal("the bundled acme was swapped in for a refused installed one")
	}
	if len(problems) != 1 || problems[0].Code != protocol.CodeNeedsNewerHost {
		t.Fatalf("problems %+v", problems)
	}
}

func TestSkippedPackagesSayWhy(t *testing.T) {
	root := t.TempDir()
	writePkg(t, root, "misnamed", manifest("other", nil), true)
	writePkg(t, root, "noexe", manifest("noexe", nil), false)
	writePkg(t, root, "hostrun", manifest("hostrun", func(m *protocol.Manifest) { m.Command = protocol.HostRunCommand("hostrun") }), false)
	writePkg(t, root, "invalid", manifest("invalid", func(m *protocol.Manifest) { m.Protocol = []int{99} }), true)
	writePkg(t, root, "good", manifest("good", nil), true)
	os.MkdirAll(filepath.Join(root, ".staging", "x"), 0o755)
	os.MkdirAll(filepath.Join(root, "empty"), 0o755)
	pkgs, problems := Discover(Options{Installed: root})
	if len(pkgs) != 1 || pkgs[0].Name != "good" {
		t.Fatalf("packages %+v", pkgs)
	}
	want := map[string]string{"misnamed": "manifest's name", "noexe": "does not exist", "hostrun": "does not serve", "invalid": "/protocol", "empty": "no readable"}
	if len(problems) != len(want) {
		t.Fatalf("problems %+v", problems)
	}
	for _, p := range problems {
		if w, ok := want[p.Name]; !ok || !strings.Contains(p.Message, w) {
			t.Errorf("%s: %s (%s)", p.Name, p.Message, p.Code)
		}
	}
}

func TestManifestProblemsCarryTheirCodeRuleAndPointer(t *testing.T) {
	cases := []struct {
		name string
		edit func(*protocol.Manifest)
		code string
		want []string
	}{
		{
			name: "no common protocol version",
			edit: func(m *protocol.Manifest) { m.Protocol = []int{99} },
			code: protocol.CodeIncompatibleProtocol,
			want: []string{"/protocol: ", "[rule protocol_version]"},
		},
		{
			name: "broken rules",
			edit: func(m *protocol.Manifest) {
				m.Provides.Operations = []protocol.Operation{{Name: "other.op", Kind: "query"}}
			},
			code: "invalid_package",
			want: []string{"/provides/operations/0/name: ", "[rule dotted_name]", "/provides/operations/0/kind: ", "[rule operation_kind]"},
		},
		{
			// The protocol decides the code even beside other broken rules:
			// no edit to the manifest fixes it.
			name: "no common protocol version and broken rules",
			edit: func(m *protocol.Manifest) {
				m.Protocol = []int{99}
				m.Provides.Operations = []protocol.Operation{{Name: "other.op"}}
			},
			code: protocol.CodeIncompatibleProtocol,
			want: []string{"[rule protocol_version]", "/provides/operations/0/name: ", "[rule dotted_name]"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writePkg(t, root, "acme", manifest("acme", tc.edit), true)
			// Negative control: the same package without the edit is admitted.
			writePkg(t, root, "clean", manifest("clean", nil), true)
			pkgs, problems := Discover(Options{Installed: root})
			if len(pkgs) != 1 || pkgs[0].Name != "clean" {
				t.Fatalf("packages %+v", pkgs)
			}
			if len(problems) != 1 || problems[0].Name != "acme" || problems[0].Code != tc.code {
				t.Fatalf("problems %+v", problems)
			}
			for _, w := range tc.want {
				if !strings.Contains(problems[0].Message, w) {
					t.Errorf("the problem does not say %q: %s", w, problems[0].Message)
				}
			}
			if strings.Contains(problems[0].Message, "\n") {
				t.Errorf("the problem spans lines: %q", problems[0].Message)
			}
		})
	}
}

func TestMissingRootsMeanNoPackages(t *testing.T) {
	pkgs, problems := Discover(Options{Installed: filepath.Join(t.TempDir(), "none"), Bundled: ""})
	if len(pkgs) != 0 || len(problems) != 0 {
		t.Fatalf("%v %v", pkgs, problems)
	}
}

func TestConflictsRefuseTheWholeSet(t *testing.T) {
	a := Package{Name: "git", Manifest: manifest("git", func(m *protocol.Manifest) {
		m.Provides.Executors = []protocol.Executor{{Name: "git-hub"}}
	})}
	b := Package{Name: "git-hub", Manifest: manifest("git-hub", func(m *protocol.Manifest) {
		m.Provides.Executors = []protocol.Executor{{Name: "git-hub"}}
	})}
	c := Package{Name: "clean", Manifest: manifest("clean", nil)}
	err := CheckConflicts([]Package{a, b, c})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Name != "git-hub" || ce.Conflicts[0].Kind != "executor" {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "registration_conflict") {
		t.Fatalf("message %q", err)
	}
	// Negative control: without the clash the set is admitted.
	if err := CheckConflicts([]Package{a, c}); err != nil {
		t.Fatalf("clean set refused: %v", err)
	}
	// A name the host registers itself.
	d := Package{Name: "d", Manifest: manifest("d", func(m *protocol.Manifest) {
		m.Provides.Routes = []protocol.Route{{Handler: "manual"}}
	})}
	if err := CheckConflicts([]Package{d}); err == nil || !strings.Contains(err.Error(), "open-conduit") {
		t.Fatalf("host name: %v", err)
	}
}
