package config

import "github.com/open-conduit/open-conduit/protocol"

// CheckConfig is what the package's doctor checks see of this
// configuration (check.run's config): dir, the directory relative paths
// resolve against; each enabled scope that uses the package, as state.scope
// shows it (its own entries with their config, the scope's routes and
// bindings); and the connections of its own types its entries in those
// scopes name, config only. No secret's value, name or reference is in it,
// so a check can be handed it whatever it does with it.
func (p *Projection) CheckConfig(dir string) protocol.CheckConfig {
	out := protocol.CheckConfig{Dir: dir}
	for _, v := range p.Views() {
		if !v.Disabled {
			out.Scopes = append(out.Scopes, v)
		}
	}
	named := map[string]bool{}
	for _, e := range p.configure.Entries {
		if e.Connection != "" {
			named[e.Connection] = true
		}
		for _, c := range e.BindingConnections {
			named[c] = true
		}
	}
	for _, c := range p.configure.Connections {
		if named[c.Name] {
			out.Connections = append(out.Connections, protocol.Connection{Name: c.Name, Type: c.Type, Config: c.Config})
		}
	}
	return out
}
