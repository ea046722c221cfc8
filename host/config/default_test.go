package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// exampleManifests reads the protocol's example manifests.
func exampleManifests(t *testing.T) []*protocol.Manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "protocol", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	var out []*protocol.Manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := protocol.ParseAndValidateManifest(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, m)
	}
	return out
}

func TestDefaultPassesCheck(t *testing.T) { passesCheck(t, Default) }

// passesCheck checks that build's config for every set of example packages
// passes Check against them, also after the file round trip a daemon
// writing it out makes.
func passesCheck(t *testing.T, build func([]*protocol.Manifest) *Config) {
	t.Helper()
	examples := exampleManifests(t)
	sets := map[string][]*protocol.Manifest{"none": nil, "all examples": examples, "test packages": testPkgs()}
	for _, m := range examples {
		sets[m.Name] = []*protocol.Manifest{m}
	}
	for name, pkgs := range sets {
		t.Run(name, func(t *testing.T) {
			c := build(pkgs)
			if ps := Check(c, pkgs); len(ps) != 0 {
				t.Fatalf("the config has problems:\n%v", ps)
			}
			data, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if ps := Check(back, pkgs); len(ps) != 0 {
				t.Fatalf("the reparsed config has problems:\n%v", ps)
			}
		})
	}
}

func TestDefaultShape(t *testing.T) {
	pkgs := exampleManifests(t)
	c := Default(pkgs)
	if len(c.Scopes) != 1 || c.Scopes[0].ID != DefaultScope {
		t.Fatalf("want one scope %q, got %+v", DefaultScope, c.Scopes)
	}
	s := c.Scopes[0]
	var types []string
	for _, m := range pkgs {
		for _, x := range m.Provides.Extensions {
			types = append(types, x.Type)
		}
	}
	if len(s.Entries) != len(types) {
		t.Fatalf("want an entry per type %v, got %+v", types, s.Entries)
	}
	for i, e := range s.Entries {
		if e.Name != types[i] || e.Type != types[i] || string(e.Config) != "{}" {
			t.Errorf("entry %d = %+v, want %s named after it with config {}", i, e, types[i])
		}
	}
	if len(s.Bindings) != 1 || s.Bindings[0].Name != DefaultScope {
		t.Fatalf("want one binding %q, got %+v", DefaultScope, s.Bindings)
	}
	ops := s.Bindings[0].Operations
	for _, want := range append(slices.Clone(protocol.BuiltinOperations), "support.reply", "support.react", "support.history", "reports.previous") {
		if !slices.Contains(ops, want) {
			t.Errorf("binding lacks %s: %v", want, ops)
		}
	}
	for _, notHandler := range []string{"support.await_reply", "reports.publish"} {
		if slices.Contains(ops, notHandler) {
			t.Errorf("binding grants %s, which is not a handler", notHandler)
		}
	}
	if len(s.Routes) != 1 || s.Routes[0].Handler != ManualHandler || s.Routes[0].Binding != DefaultScope {
		t.Errorf("want one manual route on binding %q, got %+v", DefaultScope, s.Routes)
	}
	for _, m := range pkgs {
		want := len(m.Provides.Extensions) > 0 || slices.ContainsFunc(m.Provides.Operations, func(o protocol.Operation) bool {
			return o.Kind == protocol.OperationHandler
		})
		if got := Project(c, m).Uses(DefaultScope); got != want {
			t.Errorf("default scope uses %s = %v, want %v", m.Name, got, want)
		}
	}
}

func TestDefaultEmpty(t *testing.T) {
	c := Default(nil)
	s := c.Scopes[0]
	if len(s.Entries) != 0 || !slices.Equal(s.Bindings[0].Operations, protocol.BuiltinOperations) {
		t.Errorf("empty default = %+v", s)
	}
	// The default must not share the builtins' backing array.
	s.Bindings[0].Operations[0] = "changed"
	if protocol.BuiltinOperations[0] == "changed" {
		t.Fatal("Default aliases protocol.BuiltinOperations")
	}
}

func TestDefaultDeduplicatesTypes(t *testing.T) {
	pkgs := []*protocol.Manifest{pkg("one", extType("shared")), nil, pkg("two", extType("shared"))}
	c := Default(pkgs)
	if n := len(c.Scopes[0].Entries); n != 1 {
		t.Fatalf("want one entry for a type declared twice, got %d", n)
	}
}

// TestDefaultRunsWorkThroughShellWhenDeclared: the demo binding names the
// shell executor, with a command that parses, only when a package declares
// it; the config still passes Check either way.
func TestDefaultRunsWorkThroughShellWhenDeclared(t *testing.T) {
	shell := pkg("shell", func(p *protocol.Provides) {
		p.Executors = append(p.Executors, protocol.Executor{Name: DemoExecutor})
	})
	for _, tc := range []struct {
		name string
		pkgs []*protocol.Manifest
		want string
	}{
		{"shell declared", []*protocol.Manifest{pkg("hello", extType("hello")), shell}, DemoExecutor},
		{"no shell", []*protocol.Manifest{pkg("hello", extType("hello"))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default(tc.pkgs)
			b := c.Scopes[0].Bindings[0]
			if b.Executor != tc.want {
				t.Fatalf("binding executor %q, want %q", b.Executor, tc.want)
			}
			if tc.want == "" {
				if len(b.Config) != 0 {
					t.Errorf("a binding with no executor has config %s", b.Config)
				}
			} else {
				var cmd struct {
					Command string `json:"command"`
				}
				if err := json.Unmarshal(b.Config, &cmd); err != nil || !strings.Contains(cmd.Command, "call read_context") {
					t.Errorf("binding config %s (%v) is not a command calling read_context", b.Config, err)
				}
			}
			if ps := Check(c, tc.pkgs); len(ps) != 0 {
				t.Errorf("the default has problems:\n%v", ps)
			}
		})
	}
}
