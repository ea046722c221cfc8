package config

import (
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// StarterScope is the id of the scope (and the name of the binding) in the
// starter config.
const StarterScope = "main"

// Starter is the config file `open-conduit config init` writes for the
// packages ms: the embedded default's shape, with what the operator fills in
// laid out. One scope "main" with an entry of every extension type (named
// after the type, its config the declared defaults), a connection of every
// connection type (named after the type, granted to the scope, its config
// the declared plain defaults and a secret reference env:<TYPE>_<FIELD> for
// each secret field), a binding "main" granting every handler operation and
// the builtins, and a manual route on it. An entry names its package's
// connection when the package declares exactly one connection type. It
// passes Check against ms; each package may still refuse a value the
// operator has not filled in yet when it validates its objects.
func Starter(ms []*protocol.Manifest) *Config {
	c := Default(ms)
	s := &c.Scopes[0]
	s.ID = StarterScope
	s.Bindings[0].Name = StarterScope
	for i := range s.Routes {
		s.Routes[i].Binding = StarterScope
	}
	s.Entries = nil
	seen := map[string]bool{}
	for _, m := range ms {
		if m == nil {
			continue
		}
		own := ""
		for _, t := range m.Provides.Connections {
			if !seen["connection "+t.Type] {
				seen["connection "+t.Type] = true
				c.Connections = append(c.Connections, starterConnection(t))
				s.Connections = append(s.Connections, t.Type)
			}
		}
		if len(m.Provides.Connections) == 1 {
			own = m.Provides.Connections[0].Type
		}
		for _, t := range m.Provides.Extensions {
			if !seen["entry "+t.Type] {
				seen["entry "+t.Type] = true
				s.Entries = append(s.Entries, Entry{Name: t.Type, Type: t.Type, Config: starterEntryConfig(t), Connection: own})
			}
		}
	}
	return c
}

func starterConnection(t protocol.ConnectionType) Connection {
	cn := Connection{Name: t.Type, Type: t.Type, Config: jsontext.Value("{}")}
	plain := map[string]any{}
	for _, f := range t.Fields {
		switch {
		case f.Secret:
			if cn.SecretRefs == nil {
				cn.SecretRefs = map[string]string{}
			}
			cn.SecretRefs[f.Name] = "env:" + envName(t.Type+"_"+f.Name)
		case f.Default != "":
			plain[f.Name] = f.Default
		}
	}
	cn.Config = object(plain)
	return cn
}

// starterEntryConfig is an entry's declared defaults: a typed setting's
// default where the type declares one, else the field's default string.
func starterEntryConfig(t protocol.ExtensionType) jsontext.Value {
	out := map[string]any{}
	for _, f := range t.Fields {
		if f.Default != "" {
			out[f.Name] = f.Default
		}
	}
	for _, st := range t.Settings {
		if len(st.Default) > 0 && st.Default.IsValid() {
			out[st.Field] = st.Default
		}
	}
	return object(out)
}

func object(m map[string]any) jsontext.Value {
	b, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		return jsontext.Value("{}")
	}
	return b
}

// envName makes a variable name of s: upper case, '_' for anything else.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, s)
}
