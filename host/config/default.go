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
// after the type, config {} unless demoEntries gives the type a demo
// config), a binding "demo" granting every handler operation they declare
// plus the builtins and, when a package declares the executor
// DemoExecutor, running each Work's attempts through it with demoCommand,
// a manual route on that binding, and after it a route
// on each of demoRoutes' handlers a package declares. It names no
// connection and no secret, so it passes Check for any valid set of
// manifests; each package may still refuse an entry's empty config when it
// validates it.
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
			cfg, ok := demoEntries[t.Type]
			if !ok {
				cfg = jsontext.Value("{}")
			}
			s.Entries = append(s.Entries, Entry{Name: t.Type, Type: t.Type, Config: cfg})
		}
		for _, op := range m.Provides.Operations {
			if op.Kind == protocol.OperationHandler && !slices.Contains(ops, op.Name) {
				ops = append(ops, op.Name)
			}
		}
	}
	b := Binding{Name: DefaultScope, Operations: ops}
	if anyDeclaresExecutor(pkgs, DemoExecutor) {
		b.Executor = DemoExecutor
		b.Config = jsontext.Value(demoCommand)
	}
	s.Bindings = []Binding{b}
	s.Routes = []Route{{Handler: ManualHandler, Binding: DefaultScope}}
	for _, h := range demoRoutes {
		if anyDeclaresHandler(pkgs, h) {
			s.Routes = append(s.Routes, Route{Handler: h, Binding: DefaultScope})
		}
	}
	return &Config{Scopes: []Scope{s}}
}

// demoEntries are the demo's configs of the bundled entry types that do
// nothing with an empty one: the schedule entry's job fires every 30
// seconds, so the demo shows Events becoming Work from the first minute.
var demoEntries = map[string]jsontext.Value{
	"schedule": jsontext.Value(`{"jobs":[{"name":"demo-tick","cron":"@every 30s"}]}`),
}

// demoRoutes are the handlers the demo routes its scope's Events to, after
// the manual route, when a package declares them: the schedule handler
// turns each job run into Work, the notes handler each thread of notes
// posted to the demo's notes path, the webhook handler each key of signed
// deliveries (once the operator gives the demo's webhook entry a secret).
var demoRoutes = []string{"schedule", "notes", "webhook"}

// DemoExecutor is the executor the demo's binding runs Work with, when a
// package declares it: the bundled shell package's.
const DemoExecutor = "shell"

// demoCommand is the demo binding's shell config: the script reads its
// Work's context through the toolbelt, says what it runs and completes, so
// every demo Work (a schedule run, an emitted Event, a notes thread) goes
// from pending through running to completed.
const demoCommand = `{"command": "\"$OPEN_CONDUIT\" call read_context >/dev/null && echo \"ran $OPEN_CONDUIT_WORK\"", "timeout_seconds": 60}`

// anyDeclaresExecutor reports whether one of pkgs declares the executor.
func anyDeclaresExecutor(pkgs []*protocol.Manifest, executor string) bool {
	return slices.ContainsFunc(pkgs, func(m *protocol.Manifest) bool {
		return m != nil && slices.ContainsFunc(m.Provides.Executors, func(x protocol.Executor) bool { return x.Name == executor })
	})
}

// anyDeclaresHandler reports whether one of pkgs declares the route handler.
func anyDeclaresHandler(pkgs []*protocol.Manifest, handler string) bool {
	return slices.ContainsFunc(pkgs, func(m *protocol.Manifest) bool { return m != nil && declaresHandler(m, handler) })
}
