package config

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// DefaultScope is the id of the scope (and the name of the binding) in the
// embedded default config.
const DefaultScope = "demo"

// Default is the config a daemon runs when there is no config file: one
// scope "demo" with an entry of every extension type pkgs declare (named
// after the type, config {}), a binding "demo" granting every handler
// operation they declare plus the builtins, and a manual route on that
// binding. It names no connection and no secret, so it passes Check for any
// valid set of manifests; each package may still refuse an entry's empty
// config when it validates it.
func Default(pkgs []*protocol.Manifest) *Config {
	s := Scope{ID: DefaultScope}
	ops := slices.Clone(protocol.BuiltinOperations)
	seen := map[string]bool{}
	for _, m := range pkgs {
		if m == nil {
			continue
		}
		for _, t := range m.Provides.Extensions {
			// A conflicting set may declare a type twice; one entry keeps
			// the names unique.
			if seen[t.Type] {
				continue
			}
			seen[t.Type] = true
			s.Entries = append(s.Entries, Entry{Name: t.Type, Type: t.Type, Config: jsontext.Value("{}")})
		}
		for _, op := range m.Provides.Operations {
			if op.Kind == protocol.OperationHandler && !slices.Contains(ops, op.Name) {
				ops = append(ops, op.Name)
			}
		}
	}
	s.Bindings = []Binding{{Name: DefaultScope, Operations: ops}}
	s.Routes = []Route{{Handler: ManualHandler, Binding: DefaultScope}}
	return &Config{Scopes: []Scope{s}}
}
