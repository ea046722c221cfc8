package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// ManualHandler is the builtin route handler: core serves it, so a route may
// name it without any package declaring it.
const ManualHandler = "manual"

// Problem codes Check reports. Programs and tests match on these, never on
// messages, so they never change meaning.
const (
	CodeMissingID             = "missing_id"
	CodeInvalidID             = "invalid_id"
	CodeDuplicateScope        = "duplicate_scope"
	CodeMissingName           = "missing_name"
	CodeInvalidName           = "invalid_name"
	CodeDuplicateEntry        = "duplicate_entry"
	CodeDuplicateBinding      = "duplicate_binding"
	CodeDuplicateConnection   = "duplicate_connection"
	CodeMissingType           = "missing_type"
	CodeUnknownType           = "unknown_type"
	CodeUnknownConnection     = "unknown_connection"
	CodeConnectionNotGranted  = "connection_not_granted"
	CodeConnectionType        = "connection_type"
	CodeUnknownSecret         = "unknown_secret"
	CodeMissingHandler        = "missing_handler"
	CodeUnknownHandler        = "unknown_handler"
	CodeUnknownBinding        = "unknown_binding"
	CodeUnknownExecutor       = "unknown_executor"
	CodeUnknownToolbelt       = "unknown_toolbelt"
	CodeUnknownOperation      = "unknown_operation"
	CodeInvalidSecretRef      = "invalid_secret_ref"
	CodeUnknownConnectionType = "unknown_connection_type"
	CodeUnknownSecretKey      = "unknown_secret_key"
	CodePassEnvReserved       = "pass_env_reserved"
	CodePassEnvSecret         = "pass_env_secret"
	CodeInvalidEnvName        = "invalid_env_name"
	CodeUnknownExtension      = "unknown_extension"
	CodeInvalidLimit          = "invalid_limit"
)

// ReservedEnvPrefixes are the variable prefixes no pass_env may grant: the
// host's own settings and the OS_ namespace the host sets for processes, so
// an operator cannot leak or override them through a grant.
var ReservedEnvPrefixes = []string{"OS_", "OPEN_CONDUIT_"}

// Check reports every problem of c against the packages' manifests, sorted
// by path then code. It is offline: it never resolves a secret reference and
// never starts a package (each package checks its own opaque config
// elsewhere). Messages name things (scopes, types, connections) but never
// quote a secret reference or a config value.
func Check(c *Config, pkgs []*protocol.Manifest) Problems {
	if c == nil {
		return nil
	}
	k := &checker{c: c, idx: newIndex(pkgs), envSecrets: envSecretVars(c)}
	k.scopes()
	k.connections()
	k.settings()
	k.ps.Sort()
	return k.ps
}

// index is what the packages declare, by name, so every rule is a lookup.
type index struct {
	pkgs       []*protocol.Manifest
	names      map[string]bool
	extTypes   map[string]bool
	connTypes  map[string]bool
	handlers   map[string]bool
	executors  map[string]bool
	operations map[string]bool
}

func newIndex(pkgs []*protocol.Manifest) *index {
	x := &index{
		names: map[string]bool{}, extTypes: map[string]bool{}, connTypes: map[string]bool{},
		handlers: map[string]bool{}, executors: map[string]bool{}, operations: map[string]bool{},
	}
	for _, m := range pkgs {
		if m == nil {
			continue
		}
		x.pkgs = append(x.pkgs, m)
		x.names[m.Name] = true
		p := &m.Provides
		for _, t := range p.Extensions {
			x.extTypes[t.Type] = true
		}
		for _, t := range p.Connections {
			x.connTypes[t.Type] = true
		}
		for _, r := range p.Routes {
			x.handlers[r.Handler] = true
		}
		for _, e := range p.Executors {
			x.executors[e.Name] = true
		}
		for _, o := range p.Operations {
			x.operations[o.Name] = true
		}
	}
	return x
}

// sameOwner reports whether one package declares both the extension type
// and the connection type: an entry may only use credentials its own
// package understands (and may resolve).
func (x *index) sameOwner(extType, connType string) bool {
	for _, m := range x.pkgs {
		if declaresExtType(m, extType) && declaresConnType(m, connType) {
			return true
		}
	}
	return false
}

// connType returns the declaration of a connection type (the first package's
// when a conflicting set declares it twice).
func (x *index) connType(t string) (protocol.ConnectionType, bool) {
	for _, m := range x.pkgs {
		for _, ct := range m.Provides.Connections {
			if ct.Type == t {
				return ct, true
			}
		}
	}
	return protocol.ConnectionType{}, false
}

// checker accumulates problems while walking one config.
type checker struct {
	c          *Config
	idx        *index
	envSecrets map[string]bool
	ps         Problems
}

func (k *checker) add(path, code, severity, format string, args ...any) {
	k.ps = append(k.ps, Problem{Path: path, Code: code, Severity: severity, Message: fmt.Sprintf(format, args...)})
}

func (k *checker) err(path, code, format string, args ...any) {
	k.add(path, code, Error, format, args...)
}

// ptr builds a JSON pointer from member names and indexes.
func ptr(parts ...any) string { return protocol.Pointer(parts...) }

// connectionNames are the config's connections, by name.
func (k *checker) connectionNames() map[string]*Connection {
	out := map[string]*Connection{}
	for i := range k.c.Connections {
		cn := &k.c.Connections[i]
		if _, dup := out[cn.Name]; !dup && cn.Name != "" {
			out[cn.Name] = cn
		}
	}
	return out
}

func (k *checker) scopes() {
	seen := map[string]bool{}
	conns := k.connectionNames()
	for i := range k.c.Scopes {
		s := &k.c.Scopes[i]
		at := ptr("scopes", i, "id")
		switch {
		case s.ID == "":
			k.err(at, CodeMissingID, "every scope needs an id: add one")
		case !protocol.IsIdentifier(s.ID):
			k.err(at, CodeInvalidID, "a scope id is an identifier: a lower-case letter, then lower-case letters, digits, '-' or '_', at most %d bytes", protocol.MaxIdentifierLen)
		case seen[s.ID]:
			k.err(at, CodeDuplicateScope, "scope %q is defined more than once: rename or merge the repeat", s.ID)
		}
		seen[s.ID] = true
		k.scope(i, s, conns)
	}
}

func (k *checker) scope(i int, s *Scope, conns map[string]*Connection) {
	for j, name := range s.Connections {
		if _, ok := conns[name]; !ok {
			k.err(ptr("scopes", i, "connections", j), CodeUnknownConnection,
				"connection %q is not defined: add it to connections or remove it from the scope", name)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(s.SecretRefs)) {
		if _, _, err := ParseRef(s.SecretRefs[key]); err != nil {
			k.err(ptr("scopes", i, "secret_refs", key), CodeInvalidSecretRef,
				"secret %q: a secret reference is env:VAR or file:PATH", key)
		}
	}
	names := map[string]bool{}
	for j := range s.Entries {
		k.entry(i, j, s, &s.Entries[j], names, conns)
	}
	bindings := map[string]bool{}
	for j := range s.Bindings {
		k.binding(i, j, s, &s.Bindings[j], bindings, conns)
	}
	for j, r := range s.Routes {
		switch {
		case r.Handler == "":
			k.err(ptr("scopes", i, "routes", j, "handler"), CodeMissingHandler,
				"every route names a handler: %q or one a package declares", ManualHandler)
		case r.Handler != ManualHandler && !k.idx.handlers[r.Handler]:
			k.err(ptr("scopes", i, "routes", j, "handler"), CodeUnknownHandler,
				"route handler %q: no installed or bundled package declares it; install its package, correct the name or use %q", r.Handler, ManualHandler)
		}
		if r.Binding != "" && !bindings[r.Binding] {
			k.err(ptr("scopes", i, "routes", j, "binding"), CodeUnknownBinding,
				"binding %q is not defined in scope %q: add it to the scope's bindings or correct the name", r.Binding, s.ID)
		}
	}
}

func (k *checker) entry(i, j int, s *Scope, e *Entry, names map[string]bool, conns map[string]*Connection) {
	at := func(parts ...any) string { return ptr(append([]any{"scopes", i, "entries", j}, parts...)...) }
	switch {
	case e.Name == "":
		k.err(at("name"), CodeMissingName, "every entry needs a name, unique in its scope: add one")
	case names[e.Name]:
		k.err(at("name"), CodeDuplicateEntry, "entry %q is defined more than once in scope %q: rename or remove the repeat", e.Name, s.ID)
	}
	names[e.Name] = true
	typeOK := false
	switch {
	case e.Type == "":
		k.err(at("type"), CodeMissingType, "every entry names its extension type: add the type")
	case !k.idx.extTypes[e.Type]:
		k.err(at("type"), CodeUnknownType, "extension type %q: no installed or bundled package declares it; install the package that provides it or correct the type", e.Type)
	default:
		typeOK = true
	}
	if e.Connection != "" {
		// The type rule is checked even when the grant is missing, so one
		// pass reports both; it is skipped when the connection's own type is
		// unknown, which its definition already reports.
		cn := k.connection(at("connection"), s, e.Connection, conns)
		if cn != nil && typeOK && k.idx.connTypes[cn.Type] && !k.idx.sameOwner(e.Type, cn.Type) {
			k.err(at("connection"), CodeConnectionType,
				"connection %q is of type %q, which the package of extension type %q does not declare: name a connection of one of that package's connection types", e.Connection, cn.Type, e.Type)
		}
	}
	for n, name := range e.Secrets {
		if _, ok := s.SecretRefs[name]; !ok {
			k.err(at("secrets", n), CodeUnknownSecret,
				"secret %q is not one of scope %q's secret_refs: add a reference for it or remove it", name, s.ID)
		}
	}
}

// connection checks a connection an entry or binding names: defined, and
// granted by the scope. It returns the connection when it is defined.
func (k *checker) connection(at string, s *Scope, name string, conns map[string]*Connection) *Connection {
	cn, ok := conns[name]
	if !ok {
		k.err(at, CodeUnknownConnection, "connection %q is not defined: add it to connections or correct the name", name)
		return nil
	}
	if !slices.Contains(s.Connections, name) {
		k.err(at, CodeConnectionNotGranted, "connection %q is not granted to scope %q: add it to the scope's connections", name, s.ID)
	}
	return cn
}

func (k *checker) binding(i, j int, s *Scope, b *Binding, names map[string]bool, conns map[string]*Connection) {
	at := func(parts ...any) string { return ptr(append([]any{"scopes", i, "bindings", j}, parts...)...) }
	switch {
	case b.Name == "":
		k.err(at("name"), CodeMissingName, "every binding needs a name, unique in its scope: add one")
	case names[b.Name]:
		k.err(at("name"), CodeDuplicateBinding, "binding %q is defined more than once in scope %q: rename or remove the repeat", b.Name, s.ID)
	}
	names[b.Name] = true
	if b.Executor != "" && !k.idx.executors[b.Executor] {
		k.err(at("executor"), CodeUnknownExecutor,
			"executor %q: no installed or bundled package declares it; install its package or correct the name", b.Executor)
	}
	if b.Toolbelt != "" && !slices.Contains(protocol.ToolbeltLabels, b.Toolbelt) {
		k.err(at("toolbelt"), CodeUnknownToolbelt, "toolbelt must be one of %s", strings.Join(protocol.ToolbeltLabels, ", "))
	}
	for n, op := range b.Operations {
		if !k.idx.operations[op] && !slices.Contains(protocol.BuiltinOperations, op) {
			k.err(at("operations", n), CodeUnknownOperation,
				"operation %q: no installed or bundled package declares it and it is not a builtin (%s); install its package or correct the name",
				op, strings.Join(protocol.BuiltinOperations, ", "))
		}
	}
	if b.Connection != "" {
		k.connection(at("connection"), s, b.Connection, conns)
	}
	for n, v := range b.PassEnv {
		k.passEnv(at("pass_env", n), v)
	}
}

func (k *checker) connections() {
	seen := map[string]bool{}
	for i := range k.c.Connections {
		cn := &k.c.Connections[i]
		at := ptr("connections", i, "name")
		switch {
		case cn.Name == "":
			k.err(at, CodeMissingName, "every connection needs a name: add one")
		case !protocol.IsIdentifier(cn.Name):
			k.err(at, CodeInvalidName, "a connection name is an identifier: a lower-case letter, then lower-case letters, digits, '-' or '_', at most %d bytes", protocol.MaxIdentifierLen)
		case seen[cn.Name]:
			k.err(at, CodeDuplicateConnection, "connection %q is defined more than once: rename or remove the repeat", cn.Name)
		}
		seen[cn.Name] = true
		switch {
		case cn.Type == "":
			k.err(ptr("connections", i, "type"), CodeMissingType, "every connection names its connection type: add the type")
		case !k.idx.connTypes[cn.Type]:
			k.err(ptr("connections", i, "type"), CodeUnknownConnectionType,
				"connection type %q: no installed or bundled package declares it; install the package that provides it or correct the type", cn.Type)
		}
		ct, known := k.idx.connType(cn.Type)
		for _, key := range slices.Sorted(maps.Keys(cn.SecretRefs)) {
			at := ptr("connections", i, "secret_refs", key)
			if _, _, err := ParseRef(cn.SecretRefs[key]); err != nil {
				k.err(at, CodeInvalidSecretRef, "secret %q: a secret reference is env:VAR or file:PATH", key)
			}
			if !known || len(ct.Fields) == 0 {
				continue
			}
			fi := slices.IndexFunc(ct.Fields, func(f protocol.Field) bool { return f.Name == key })
			switch {
			case fi < 0:
				k.add(at, CodeUnknownSecretKey, Warning,
					"connection type %q declares no field %q: correct the key or remove it (the package never reads it)", cn.Type, key)
			case !ct.Fields[fi].Secret:
				k.add(at, CodeUnknownSecretKey, Warning,
					"connection type %q declares %q as a plain setting, not a secret: set it in the connection's config instead", cn.Type, key)
			}
		}
	}
}

func (k *checker) settings() {
	for _, l := range []struct {
		name string
		v    *int
	}{{"concurrency", k.c.Settings.Concurrency}, {"job_concurrency", k.c.Settings.JobConcurrency}} {
		if l.v != nil && *l.v < 1 {
			k.err(ptr("settings", l.name), CodeInvalidLimit, "a concurrency limit is a whole number of at least 1: raise it, or remove it for the default")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.c.Settings.Extensions)) {
		if !k.idx.names[name] {
			k.add(ptr("settings", "extensions", name), CodeUnknownExtension, Warning,
				"no installed or bundled package is named %q: these settings do nothing until it is installed; remove them if it is gone", name)
		}
		for n, v := range k.c.Settings.Extensions[name].PassEnv {
			k.passEnv(ptr("settings", "extensions", name, "pass_env", n), v)
		}
	}
}

// passEnv checks one granted variable name. The messages never quote it: a
// name an env: reference points at is a secret reference's target.
func (k *checker) passEnv(at, v string) {
	switch {
	case !isEnvName(v):
		k.err(at, CodeInvalidEnvName, "a variable name is a letter or '_', then letters, digits or '_': correct it")
	case slices.ContainsFunc(ReservedEnvPrefixes, func(p string) bool { return strings.HasPrefix(v, p) }):
		k.err(at, CodePassEnvReserved, "variables starting with %s are Open Conduit's own and are never passed: remove it",
			strings.Join(ReservedEnvPrefixes, " or "))
	case k.envSecrets[v]:
		k.err(at, CodePassEnvSecret, "this variable is named by an env: secret reference, and secrets reach a package only through secret.resolve: remove it from pass_env")
	}
}

// isEnvName reports whether s is [A-Za-z_][A-Za-z0-9_]*.
func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// envSecretVars are the variables every env: secret reference in c names,
// scopes' and connections' alike, so no pass_env can hand one out raw.
func envSecretVars(c *Config) map[string]bool {
	out := map[string]bool{}
	note := func(refs map[string]string) {
		for _, ref := range refs {
			if kind, target, err := ParseRef(ref); err == nil && kind == "env" {
				out[target] = true
			}
		}
	}
	for i := range c.Scopes {
		note(c.Scopes[i].SecretRefs)
	}
	for i := range c.Connections {
		note(c.Connections[i].SecretRefs)
	}
	return out
}

func declaresExtType(m *protocol.Manifest, t string) bool {
	return slices.ContainsFunc(m.Provides.Extensions, func(x protocol.ExtensionType) bool { return x.Type == t })
}

func declaresConnType(m *protocol.Manifest, t string) bool {
	return slices.ContainsFunc(m.Provides.Connections, func(x protocol.ConnectionType) bool { return x.Type == t })
}

func declaresHandler(m *protocol.Manifest, h string) bool {
	return slices.ContainsFunc(m.Provides.Routes, func(x protocol.Route) bool { return x.Handler == h })
}

func declaresExecutor(m *protocol.Manifest, e string) bool {
	return slices.ContainsFunc(m.Provides.Executors, func(x protocol.Executor) bool { return x.Name == e })
}
