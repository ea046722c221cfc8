package config

import (
	"maps"
	"slices"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// ScopeUse is one scope that uses a package.
type ScopeUse struct {
	ID string
	// Disabled scopes start nothing new but keep what they hold, so the
	// package's reads there stay allowed.
	Disabled bool
}

// Object is one config object a package checks with validate, at the JSON
// path of its config.
type Object struct {
	Path   string
	Params protocol.ValidateParams
}

// Projection is what one package sees of one configuration, written once:
// the scopes that use it, what configure tells it, the scope views its
// state reads answer, the config objects it validates and the secrets it
// may resolve. Project computes it in one pass; afterwards it is only read,
// so goroutines share it freely. Callers must not modify the slices and
// maps it returns, nor the Config it was made from.
type Projection struct {
	cfg       *Config
	m         *protocol.Manifest
	scopes    []ScopeUse
	ids       []string
	views     map[string]protocol.ScopeView
	configure protocol.ConfigureParams
	objects   []Object
	secrets   map[string]scopeSecrets
}

// scopeSecrets is what a package may resolve in one scope.
type scopeSecrets struct {
	// entry: the package has one of its entries in the scope. Without one
	// it resolves nothing there.
	entry bool
	// selected are the scope's secret references its entries select, by
	// secret name.
	selected map[string]string
	// named are the connections its entries or the scope's bindings name.
	named []string
	// granted are the connections the scope grants.
	granted []string
}

// owned are the types a package declares, for lookups.
type owned struct {
	ext, conn map[string]bool
	// handler maps each route handler it declares to whether the handler
	// checks the binding its routes bind.
	handler map[string]bool
}

func ownedBy(m *protocol.Manifest) owned {
	o := owned{ext: map[string]bool{}, conn: map[string]bool{}, handler: map[string]bool{}}
	for _, t := range m.Provides.Extensions {
		o.ext[t.Type] = true
	}
	for _, t := range m.Provides.Connections {
		o.conn[t.Type] = true
	}
	for _, r := range m.Provides.Routes {
		o.handler[r.Handler] = o.handler[r.Handler] || r.Binding
	}
	return o
}

// Project computes what package m sees of c. A nil c or m sees nothing.
func Project(c *Config, m *protocol.Manifest) *Projection {
	p := &Projection{cfg: c, m: m, views: map[string]protocol.ScopeView{}, secrets: map[string]scopeSecrets{}}
	if c == nil || m == nil {
		return p
	}
	o := ownedBy(m)
	p.useScopes(o)
	p.configureContent(o)
	p.validateObjects(o)
	return p
}

// useScopes finds the scopes that use the package, with their views, and
// what it may resolve in every scope. A repeated scope id counts once, as
// its first definition, which is the one Config.Scope answers.
func (p *Projection) useScopes(o owned) {
	for i := range p.cfg.Scopes {
		s := &p.cfg.Scopes[i]
		if _, seen := p.secrets[s.ID]; seen || s.ID == "" {
			continue
		}
		p.secrets[s.ID] = secretsIn(s, o)
		if !uses(p.cfg, s, p.m) {
			continue
		}
		p.scopes = append(p.scopes, ScopeUse{ID: s.ID, Disabled: s.Disabled})
		p.views[s.ID] = view(s, o)
	}
	slices.SortFunc(p.scopes, func(a, b ScopeUse) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	for _, s := range p.scopes {
		p.ids = append(p.ids, s.ID)
	}
}

// uses reports whether scope s uses package m: an entry of one of its
// extension types, a route on one of its handlers, a binding on one of its
// executors or granted one of its operations, or a connection of one of its
// connection types named by the scope, an entry or a binding. It ignores
// Disabled: a disabled scope still holds the package's data, so its reads
// stay allowed.
func uses(c *Config, s *Scope, m *protocol.Manifest) bool {
	for _, e := range s.Entries {
		if declaresExtType(m, e.Type) {
			return true
		}
	}
	for _, r := range s.Routes {
		if declaresHandler(m, r.Handler) {
			return true
		}
	}
	ownConn := func(name string) bool {
		cn, ok := c.Connection(name)
		return name != "" && ok && declaresConnType(m, cn.Type)
	}
	for _, b := range s.Bindings {
		if declaresExecutor(m, b.Executor) || ownConn(b.Connection) {
			return true
		}
		for _, op := range b.Operations {
			if _, ok := m.Operation(op); ok {
				return true
			}
		}
	}
	for _, e := range s.Entries {
		if ownConn(e.Connection) {
			return true
		}
	}
	return slices.ContainsFunc(s.Connections, ownConn)
}

// view is a scope as the package may see it: its own entries (with their
// config), every route and binding (without their config), and never a
// secret reference.
func view(s *Scope, o owned) protocol.ScopeView {
	v := protocol.ScopeView{ID: s.ID, Disabled: s.Disabled}
	for _, e := range s.Entries {
		if o.ext[e.Type] {
			v.Entries = append(v.Entries, protocol.Entry{Scope: s.ID, Type: e.Type, Name: e.Name, Config: e.Config, Connection: e.Connection})
		}
	}
	for _, r := range s.Routes {
		v.Routes = append(v.Routes, protocol.RouteView{Handler: r.Handler, Binding: r.Binding})
	}
	for _, b := range s.Bindings {
		v.Bindings = append(v.Bindings, protocol.BindingView{Name: b.Name, Executor: b.Executor, Toolbelt: b.Toolbelt, Operations: b.Operations, Connection: b.Connection})
	}
	return v
}

func secretsIn(s *Scope, o owned) scopeSecrets {
	ss := scopeSecrets{selected: map[string]string{}, granted: s.Connections}
	for _, e := range s.Entries {
		if !o.ext[e.Type] {
			continue
		}
		ss.entry = true
		for _, name := range e.Secrets {
			if ref, ok := s.SecretRefs[name]; ok {
				ss.selected[name] = ref
			}
		}
		if e.Connection != "" {
			ss.named = append(ss.named, e.Connection)
		}
	}
	for _, b := range s.Bindings {
		if b.Connection != "" {
			ss.named = append(ss.named, b.Connection)
		}
	}
	return ss
}

// grantedOwn returns the connection name names when it is of one of the
// package's connection types and scope s grants it.
func (p *Projection) grantedOwn(s *Scope, name string, o owned) (*Connection, bool) {
	cn, ok := p.cfg.Connection(name)
	if name == "" || !ok || !o.conn[cn.Type] || !slices.Contains(s.Connections, name) {
		return nil, false
	}
	return cn, true
}

// configureContent is what configure sends: the package's entries in
// enabled scopes and, apart, in disabled ones, each with the connection it
// names and the connections its scope's bindings name (of the package's
// types, granted by the scope, each once); and those connections, config
// and secret names only, in config order. A connection only a binding names
// in a scope where the package has no entry is not the package's there (it
// may not resolve its secrets), so it is not sent.
func (p *Projection) configureContent(o owned) {
	used := map[string]bool{}
	for i := range p.cfg.Scopes {
		s := &p.cfg.Scopes[i]
		var bindingConns []string
		for _, b := range s.Bindings {
			if cn, ok := p.grantedOwn(s, b.Connection, o); ok && !slices.Contains(bindingConns, cn.Name) {
				bindingConns = append(bindingConns, cn.Name)
			}
		}
		for _, e := range s.Entries {
			if !o.ext[e.Type] {
				continue
			}
			for _, name := range bindingConns {
				used[name] = true
			}
			entry := protocol.Entry{Scope: s.ID, Type: e.Type, Name: e.Name, Config: e.Config, BindingConnections: bindingConns}
			if cn, ok := p.grantedOwn(s, e.Connection, o); ok {
				entry.Connection = cn.Name
				used[cn.Name] = true
			}
			if s.Disabled {
				p.configure.Disabled = append(p.configure.Disabled, entry)
			} else {
				p.configure.Entries = append(p.configure.Entries, entry)
			}
		}
	}
	for _, cn := range p.cfg.Connections {
		if !used[cn.Name] {
			continue
		}
		p.configure.Connections = append(p.configure.Connections, protocol.Connection{
			Name: cn.Name, Type: cn.Type, Config: cn.Config, Secrets: slices.Sorted(maps.Keys(cn.SecretRefs)),
		})
	}
}

// validateObjects lists the config objects of the package's types, in
// every scope, disabled ones too: entries of its extension types, routes on
// its route handlers with, for a handler that checks bindings, the binding
// the route binds, and connections of its connection types.
func (p *Projection) validateObjects(o owned) {
	for i := range p.cfg.Scopes {
		s := &p.cfg.Scopes[i]
		for j, e := range s.Entries {
			if o.ext[e.Type] {
				p.objects = append(p.objects, Object{
					Path:   protocol.Pointer("scopes", i, "entries", j, "config"),
					Params: protocol.ValidateParams{Kind: protocol.ValidateExtension, Type: e.Type, Config: e.Config, Scope: s.ID, Name: e.Name},
				})
			}
		}
		for j, r := range s.Routes {
			p.routeObjects(i, j, s, r, o)
		}
	}
	for i, cn := range p.cfg.Connections {
		if o.conn[cn.Type] {
			p.objects = append(p.objects, Object{
				Path:   protocol.Pointer("connections", i, "config"),
				Params: protocol.ValidateParams{Kind: protocol.ValidateConnection, Type: cn.Type, Config: cn.Config, Name: cn.Name},
			})
		}
	}
}

// routeObjects lists route j of scope i when it is on one of the package's
// handlers, and the binding it binds when that handler checks bindings and
// the scope defines it (a binding the scope lacks is the rules' problem).
func (p *Projection) routeObjects(i, j int, s *Scope, r Route, o owned) {
	checksBinding, ok := o.handler[r.Handler]
	if !ok {
		return
	}
	p.objects = append(p.objects, Object{
		Path:   protocol.Pointer("scopes", i, "routes", j, "config"),
		Params: protocol.ValidateParams{Kind: protocol.ValidateRoute, Type: r.Handler, Config: r.Config, Scope: s.ID},
	})
	if !checksBinding || r.Binding == "" {
		return
	}
	for _, b := range s.Bindings {
		if b.Name == r.Binding {
			p.objects = append(p.objects, Object{
				Path:   protocol.Pointer("scopes", i, "routes", j, "binding"),
				Params: protocol.ValidateParams{Kind: protocol.ValidateBinding, Type: r.Handler, Config: bindingObject(b), Scope: s.ID, Name: b.Name},
			})
			return
		}
	}
}

// bindingObject is a binding as the operator wrote it but for pass_env:
// the variables a package's process receives are the host's grant, not
// something a route handler judges.
func bindingObject(b Binding) jsontext.Value {
	v, err := json.Marshal(struct {
		Name       string         `json:"name"`
		Executor   string         `json:"executor,omitempty"`
		Toolbelt   string         `json:"toolbelt,omitempty"`
		Operations []string       `json:"operations,omitempty"`
		Connection string         `json:"connection,omitempty"`
		Config     jsontext.Value `json:"config,omitzero"`
	}{b.Name, b.Executor, b.Toolbelt, b.Operations, b.Connection, b.Config}, json.Deterministic(true))
	if err != nil {
		// Only a binding built in code with an invalid raw config gets
		// here; Parse never returns one. Its name alone still says which.
		v, _ = json.Marshal(struct {
			Name string `json:"name"`
		}{b.Name})
	}
	return v
}

// Scopes are the scopes that use the package, sorted by id, disabled ones
// included and marked.
func (p *Projection) Scopes() []ScopeUse { return p.scopes }

// ScopeIDs are the ids of Scopes, sorted.
func (p *Projection) ScopeIDs() []string { return p.ids }

// Uses reports whether scope uses the package, disabled or not: its state
// reads, emissions and secrets are limited to these scopes.
func (p *Projection) Uses(scope string) bool {
	_, ok := p.views[scope]
	return ok
}

// Configure is what configure sends the package: its entries, disabled
// entries and connections. The caller sets the generation and the KV
// layout.
func (p *Projection) Configure() protocol.ConfigureParams { return p.configure }

// View is scope as state.scope answers it, when the scope uses the
// package.
func (p *Projection) View(scope string) (protocol.ScopeView, bool) {
	v, ok := p.views[scope]
	return v, ok
}

// Views are the views of every scope that uses the package, in ScopeIDs
// order, as state.scopes answers them.
func (p *Projection) Views() []protocol.ScopeView {
	out := make([]protocol.ScopeView, len(p.ids))
	for i, id := range p.ids {
		out[i] = p.views[id]
	}
	return out
}

// Objects are the config objects the package checks with validate, with
// their JSON paths, in config order: in every scope its entries, then its
// routes, each followed by the binding it binds when its handler checks
// bindings; then its connections.
func (p *Projection) Objects() []Object { return p.objects }

// SecretRefs returns the secret references the package may resolve in
// scope, by secret name, for the host's secret.resolve alone. The result is
// the caller's own copy.
//
// It resolves nothing in a scope where it has none of its entries. With
// connection empty it is the scope's secret_refs its own entries select
// (Entry.Secrets); another package's entry selecting a secret grants it
// nothing. With connection set it is that connection's secret_refs, when
// the scope grants the connection, the connection is of one of the
// package's connection types, and one of its entries in the scope or one
// of the scope's bindings names it.
//
// Anything else is protocol.ErrUnauthorized; the error names the scope or
// connection and never a reference. A disabled scope is not refused: Work
// it still holds may need its credentials.
func (p *Projection) SecretRefs(scope, connection string) (map[string]string, error) {
	if p.cfg == nil || p.m == nil {
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "no configuration grants secrets in scope %q", scope)
	}
	ss, ok := p.secrets[scope]
	switch {
	case !ok:
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "scope %q is not configured", scope)
	case !ss.entry:
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "package %s has no entry in scope %q", p.m.Name, scope)
	case connection == "":
		return maps.Clone(ss.selected), nil
	}
	cn, ok := p.cfg.Connection(connection)
	switch {
	case !ok:
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "connection %q is not configured", connection)
	case !slices.Contains(ss.granted, connection):
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "connection %q is not granted to scope %q", connection, scope)
	case !declaresConnType(p.m, cn.Type):
		return nil, protocol.Errorf(protocol.ErrUnauthorized, "connection %q is not of a connection type package %s declares", connection, p.m.Name)
	case !slices.Contains(ss.named, connection):
		return nil, protocol.Errorf(protocol.ErrUnauthorized,
			"connection %q is named by none of package %s's entries nor any binding in scope %q", connection, p.m.Name, scope)
	}
	refs := make(map[string]string, len(cn.SecretRefs))
	maps.Copy(refs, cn.SecretRefs)
	return refs, nil
}
