package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/open-conduit/open-conduit"

// under reports whether pkg is path or a package below it.
func under(pkg, path string) bool {
	return pkg == path || strings.HasPrefix(pkg, path+"/")
}

// importRule is one arrow that must keep pointing down: no package of pkgs
// may reach, directly or through any chain of imports, a package forbids
// names.
type importRule struct {
	name    string
	pkgs    string
	why     string
	forbids func(pkg string) bool
}

// forbidsAny forbids every package at or below one of paths.
func forbidsAny(paths ...string) func(string) bool {
	return func(pkg string) bool {
		return slices.ContainsFunc(paths, func(p string) bool { return under(pkg, p) })
	}
}

var importRules = []importRule{
	{
		name: "ProtocolImportsNothingOfOurs",
		pkgs: "./protocol/...",
		why:  "protocol is the ground both sides of the wire share; it imports nothing of this module",
		forbids: func(pkg string) bool {
			return under(pkg, module) && !under(pkg, module+"/protocol")
		},
	},
	{
		name: "SDKNeverReachesTheHost",
		pkgs: "./sdk/...",
		why:  "an extension binary stays small and host-free: no host code, store, session, pebble or bubbletea",
		forbids: forbidsAny(module+"/host", module+"/pebblekv", module+"/session",
			"github.com/cockroachdb/pebble", "github.com/charmbracelet/bubbletea"),
	},
	{
		name: "ExtensionsLinkNoCrypto",
		pkgs: "./sdk",
		why: "every extension start would pay crypto's package setup (the FIPS 140 module, about 0.1 ms); " +
			"SHA-256 digests live in protocol/digest, which only hosts import, and the SDK checks artifacts with CRC-32",
		forbids: forbidsAny("crypto"),
	},
	{
		name:    "ClientNeverReachesTheHost",
		pkgs:    "./client/...",
		why:     "the client reaches the daemon only through the management API",
		forbids: forbidsAny(module+"/host", module+"/pebblekv", module+"/session"),
	},
	{
		name:    "TUINeverReachesTheHost",
		pkgs:    "./tui/...",
		why:     "the dashboard is a client of the management API only",
		forbids: forbidsAny(module+"/host", module+"/pebblekv", module+"/session", "github.com/cockroachdb/pebble"),
	},
}

// importGraph maps every package pkgs reach (themselves included) to its
// imports, as `go list -deps` reports them.
func importGraph(t *testing.T, pkgs string) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH; the import rules are read with go list -deps")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkgs).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkgs, err, stderr)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	return graph
}

// violations lists each forbidden package the graph holds, with the
// packages that import it, sorted.
func (r importRule) violations(graph map[string][]string) []string {
	var out []string
	for pkg := range graph {
		if !r.forbids(pkg) {
			continue
		}
		var by []string
		for from, imports := range graph {
			if slices.Contains(imports, pkg) {
				by = append(by, from)
			}
		}
		slices.Sort(by)
		out = append(out, pkg+" (imported by "+strings.Join(by, ", ")+")")
	}
	slices.Sort(out)
	return out
}

// TestImportRules keeps the layers' arrows pointing down, transitively.
func TestImportRules(t *testing.T) {
	for _, r := range importRules {
		t.Run(r.name, func(t *testing.T) {
			graph := importGraph(t, r.pkgs)
			if len(graph) == 0 {
				t.Fatalf("go list found no packages for %s", r.pkgs)
			}
			if v := r.violations(graph); len(v) > 0 {
				t.Errorf("%s reaches what it must not (%s):\n  %s", r.pkgs, r.why, strings.Join(v, "\n  "))
			}
		})
	}
}

// TestImportRulesFlagKnownViolations is the negative control: each rule
// flags an input known to break it, a real one (the daemon's service, which
// is host code over the store) and a made-up one reached only transitively.
func TestImportRulesFlagKnownViolations(t *testing.T) {
	service := importGraph(t, "./host/service")
	made := func(chain ...string) map[string][]string {
		g := map[string][]string{}
		for i, p := range chain {
			g[p] = nil
			if i+1 < len(chain) {
				g[p] = []string{chain[i+1]}
			}
		}
		return g
	}
	cases := []struct {
		rule  string
		graph map[string][]string
		want  string
	}{
		{"ProtocolImportsNothingOfOurs", made(module+"/protocol", "encoding/json", module+"/jsonrpc"), module + "/jsonrpc"},
		{"SDKNeverReachesTheHost", service, module + "/pebblekv"},
		{"SDKNeverReachesTheHost", service, "github.com/cockroachdb/pebble/v2"},
		{"SDKNeverReachesTheHost", made(module+"/sdk", module+"/sdk/x", "github.com/charmbracelet/bubbletea"), "github.com/charmbracelet/bubbletea"},
		{"ExtensionsLinkNoCrypto", importGraph(t, "./sdk/memhost"), "crypto/sha256"},
		{"ExtensionsLinkNoCrypto", made(module+"/sdk", module+"/protocol", "crypto"), "crypto"},
		{"ClientNeverReachesTheHost", made(module+"/client", module+"/client/x", module+"/session"), module + "/session"},
		{"ClientNeverReachesTheHost", service, module + "/host/config"},
	}
	for _, tc := range cases {
		i := slices.IndexFunc(importRules, func(r importRule) bool { return r.name == tc.rule })
		if i < 0 {
			t.Fatalf("no rule %s", tc.rule)
		}
		v := importRules[i].violations(tc.graph)
		if !slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, tc.want+" ") }) {
			t.Errorf("%s does not flag %s in a graph that reaches it; it flags %v", tc.rule, tc.want, v)
		}
	}
	// And a clean graph is not flagged.
	for _, r := range importRules {
		if v := r.violations(made(module+"/protocol", "strings")); len(v) > 0 {
			t.Errorf("%s flags a clean graph: %v", r.name, v)
		}
	}
}
