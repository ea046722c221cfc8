package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// pkg builds a manifest named name; opts fill in what it provides.
func pkg(name string, opts ...func(*protocol.Provides)) *protocol.Manifest {
	m := &protocol.Manifest{Name: name, Protocol: []int{1}, Command: []string{name}}
	for _, o := range opts {
		o(&m.Provides)
	}
	return m
}

func extType(t string) func(*protocol.Provides) {
	return func(p *protocol.Provides) { p.Extensions = append(p.Extensions, protocol.ExtensionType{Type: t}) }
}

func connType(t string, fields ...protocol.Field) func(*protocol.Provides) {
	return func(p *protocol.Provides) {
		p.Connections = append(p.Connections, protocol.ConnectionType{Type: t, Fields: fields})
	}
}

func handler(h string) func(*protocol.Provides) {
	return func(p *protocol.Provides) { p.Routes = append(p.Routes, protocol.Route{Handler: h}) }
}

func executor(e string) func(*protocol.Provides) {
	return func(p *protocol.Provides) { p.Executors = append(p.Executors, protocol.Executor{Name: e}) }
}

func operation(name, kind string) func(*protocol.Provides) {
	return func(p *protocol.Provides) {
		p.Operations = append(p.Operations, protocol.Operation{Name: name, Kind: kind})
	}
}

// testPkgs are two packages: alpha declares every kind of name Check looks
// up, beta an extension type and a field-less connection type.
func testPkgs() []*protocol.Manifest {
	return []*protocol.Manifest{
		pkg("alpha", extType("alpha"),
			connType("alpha", protocol.Field{Name: "token", Secret: true}, protocol.Field{Name: "url"}),
			handler("alpha"), executor("alpha"), operation("alpha.do", protocol.OperationHandler)),
		pkg("beta", extType("beta"), connType("beta"), operation("beta.op", protocol.OperationHandler)),
	}
}

// goodConfig has no problem against testPkgs; each case breaks one rule.
func goodConfig() *Config {
	return &Config{
		Connections: []Connection{
			{Name: "alpha-main", Type: "alpha", SecretRefs: map[string]string{"token": "env:ALPHA_TOKEN"}},
			{Name: "beta-main", Type: "beta"},
		},
		Scopes: []Scope{{
			ID: "one",
			Entries: []Entry{
				{Name: "a", Type: "alpha", Connection: "alpha-main", Secrets: []string{"s1"}},
				{Name: "b", Type: "beta", Secrets: []string{"s2"}},
			},
			Routes: []Route{{Handler: "alpha", Binding: "run"}, {Handler: ManualHandler}},
			Bindings: []Binding{{
				Name: "run", Executor: "alpha", Toolbelt: "cli",
				Operations: []string{"alpha.do", "read_context"},
				Connection: "beta-main", PassEnv: []string{"HOME_EXTRA"},
			}},
			SecretRefs:  map[string]string{"s1": "env:S1", "s2": "file:/run/s2"},
			Connections: []string{"alpha-main", "beta-main"},
		}},
		Settings: Settings{Extensions: map[string]ExtensionSettings{
			"alpha": {PassEnv: []string{"SSH_AUTH_SOCK"}},
		}},
	}
}

type want struct{ path, code, severity string }

func TestCheckGoodConfig(t *testing.T) {
	if ps := Check(goodConfig(), testPkgs()); len(ps) != 0 {
		t.Fatalf("good config has problems:\n%v", ps)
	}
	if ps := Check(nil, testPkgs()); ps != nil {
		t.Fatalf("nil config: %v", ps)
	}
	if ps := Check(&Config{}, nil); len(ps) != 0 {
		t.Fatalf("empty config: %v", ps)
	}
}

func TestCheckRules(t *testing.T) {
	E, W := Error, Warning
	s0 := func(c *Config) *Scope { return &c.Scopes[0] }
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   []want
	}{
		{"scope id missing", func(c *Config) { s0(c).ID = "" },
			[]want{{"/scopes/0/id", CodeMissingID, E}}},
		{"scope id not an identifier", func(c *Config) { s0(c).ID = "One Scope" },
			[]want{{"/scopes/0/id", CodeInvalidID, E}}},
		{"scope id repeated", func(c *Config) { c.Scopes = append(c.Scopes, c.Scopes[0]) },
			[]want{{"/scopes/1/id", CodeDuplicateScope, E}}},
		{"scope grants an unknown connection", func(c *Config) { s0(c).Connections = append(s0(c).Connections, "nope") },
			[]want{{"/scopes/0/connections/2", CodeUnknownConnection, E}}},
		{"scope secret ref malformed", func(c *Config) { s0(c).SecretRefs["s1"] = "vault:x" },
			[]want{{"/scopes/0/secret_refs/s1", CodeInvalidSecretRef, E}}},
		{"scope secret ref without target", func(c *Config) { s0(c).SecretRefs["s2"] = "file:" },
			[]want{{"/scopes/0/secret_refs/s2", CodeInvalidSecretRef, E}}},

		{"entry name missing", func(c *Config) { s0(c).Entries[0].Name = "" },
			[]want{{"/scopes/0/entries/0/name", CodeMissingName, E}}},
		{"entry name repeated", func(c *Config) { s0(c).Entries[1].Name = "a" },
			[]want{{"/scopes/0/entries/1/name", CodeDuplicateEntry, E}}},
		{"entry type missing", func(c *Config) { s0(c).Entries[1].Type = "" },
			[]want{{"/scopes/0/entries/1/type", CodeMissingType, E}}},
		{"entry type undeclared", func(c *Config) { s0(c).Entries[1].Type = "gamma" },
			[]want{{"/scopes/0/entries/1/type", CodeUnknownType, E}}},
		{"entry connection undefined", func(c *Config) { s0(c).Entries[0].Connection = "nope" },
			[]want{{"/scopes/0/entries/0/connection", CodeUnknownConnection, E}}},
		{"entry connection not granted", func(c *Config) { s0(c).Connections = []string{"beta-main"} },
			[]want{{"/scopes/0/entries/0/connection", CodeConnectionNotGranted, E}}},
		{"entry connection of another package's type", func(c *Config) { s0(c).Entries[1].Connection = "alpha-main" },
			[]want{{"/scopes/0/entries/1/connection", CodeConnectionType, E}}},
		{"entry selects an undefined secret", func(c *Config) { s0(c).Entries[0].Secrets = []string{"s1", "nope"} },
			[]want{{"/scopes/0/entries/0/secrets/1", CodeUnknownSecret, E}}},

		{"route handler missing", func(c *Config) { s0(c).Routes[0].Handler = "" },
			[]want{{"/scopes/0/routes/0/handler", CodeMissingHandler, E}}},
		{"route handler undeclared", func(c *Config) { s0(c).Routes[0].Handler = "gamma" },
			[]want{{"/scopes/0/routes/0/handler", CodeUnknownHandler, E}}},
		{"route binding undefined", func(c *Config) { s0(c).Routes[1].Binding = "nope" },
			[]want{{"/scopes/0/routes/1/binding", CodeUnknownBinding, E}}},
		{"route binding of another scope", func(c *Config) {
			c.Scopes = append(c.Scopes, Scope{ID: "two", Routes: []Route{{Handler: ManualHandler, Binding: "run"}}})
		}, []want{{"/scopes/1/routes/0/binding", CodeUnknownBinding, E}}},

		{"binding name missing", func(c *Config) { s0(c).Bindings[0].Name = "" },
			[]want{{"/scopes/0/bindings/0/name", CodeMissingName, E}, {"/scopes/0/routes/0/binding", CodeUnknownBinding, E}}},
		{"binding name repeated", func(c *Config) { s0(c).Bindings = append(s0(c).Bindings, Binding{Name: "run"}) },
			[]want{{"/scopes/0/bindings/1/name", CodeDuplicateBinding, E}}},
		{"binding executor undeclared", func(c *Config) { s0(c).Bindings[0].Executor = "gamma" },
			[]want{{"/scopes/0/bindings/0/executor", CodeUnknownExecutor, E}}},
		{"binding toolbelt unknown", func(c *Config) { s0(c).Bindings[0].Toolbelt = "telepathy" },
			[]want{{"/scopes/0/bindings/0/toolbelt", CodeUnknownToolbelt, E}}},
		{"binding operation undeclared", func(c *Config) {
			s0(c).Bindings[0].Operations = append(s0(c).Bindings[0].Operations, "gamma.op")
		}, []want{{"/scopes/0/bindings/0/operations/2", CodeUnknownOperation, E}}},
		{"binding connection undefined", func(c *Config) { s0(c).Bindings[0].Connection = "nope" },
			[]want{{"/scopes/0/bindings/0/connection", CodeUnknownConnection, E}}},
		{"binding connection not granted", func(c *Config) { s0(c).Connections = []string{"alpha-main"} },
			[]want{{"/scopes/0/bindings/0/connection", CodeConnectionNotGranted, E}}},
		{"binding pass_env reserved", func(c *Config) { s0(c).Bindings[0].PassEnv = []string{"HOME_EXTRA", "OPEN_CONDUIT_TOKEN"} },
			[]want{{"/scopes/0/bindings/0/pass_env/1", CodePassEnvReserved, E}}},
		{"binding pass_env secret", func(c *Config) { s0(c).Bindings[0].PassEnv = []string{"S1"} },
			[]want{{"/scopes/0/bindings/0/pass_env/0", CodePassEnvSecret, E}}},
		{"binding pass_env invalid", func(c *Config) { s0(c).Bindings[0].PassEnv = []string{"A-B"} },
			[]want{{"/scopes/0/bindings/0/pass_env/0", CodeInvalidEnvName, E}}},

		{"connection name missing", func(c *Config) { c.Connections = append(c.Connections, Connection{Type: "beta"}) },
			[]want{{"/connections/2/name", CodeMissingName, E}}},
		{"connection name not an identifier", func(c *Config) {
			c.Connections = append(c.Connections, Connection{Name: "Beta Two", Type: "beta"})
		}, []want{{"/connections/2/name", CodeInvalidName, E}}},
		{"connection name repeated", func(c *Config) {
			c.Connections = append(c.Connections, Connection{Name: "beta-main", Type: "beta"})
		}, []want{{"/connections/2/name", CodeDuplicateConnection, E}}},
		{"connection type missing", func(c *Config) { c.Connections[1].Type = "" },
			[]want{{"/connections/1/type", CodeMissingType, E}}},
		{"connection type undeclared", func(c *Config) { c.Connections[1].Type = "gamma" },
			[]want{{"/connections/1/type", CodeUnknownConnectionType, E}}},
		{"connection secret ref malformed", func(c *Config) { c.Connections[0].SecretRefs["token"] = "ALPHA_TOKEN" },
			[]want{{"/connections/0/secret_refs/token", CodeInvalidSecretRef, E}}},
		{"connection secret key is a plain field", func(c *Config) { c.Connections[0].SecretRefs["url"] = "env:URL" },
			[]want{{"/connections/0/secret_refs/url", CodeUnknownSecretKey, W}}},
		{"connection secret key undeclared", func(c *Config) { c.Connections[0].SecretRefs["other"] = "env:OTHER" },
			[]want{{"/connections/0/secret_refs/other", CodeUnknownSecretKey, W}}},
		{"connection secret key free when the type declares no fields", func(c *Config) {
			c.Connections[1].SecretRefs = map[string]string{"anything": "env:ANYTHING"}
		}, nil},

		{"settings pass_env reserved OS_", func(c *Config) { c.Settings.Extensions["alpha"] = ExtensionSettings{PassEnv: []string{"OS_THING"}} },
			[]want{{"/settings/extensions/alpha/pass_env/0", CodePassEnvReserved, E}}},
		{"settings pass_env reserved OPEN_CONDUIT_", func(c *Config) {
			c.Settings.Extensions["alpha"] = ExtensionSettings{PassEnv: []string{"OPEN_CONDUIT_HOME"}}
		}, []want{{"/settings/extensions/alpha/pass_env/0", CodePassEnvReserved, E}}},
		{"settings pass_env names a scope's env secret", func(c *Config) {
			c.Settings.Extensions["alpha"] = ExtensionSettings{PassEnv: []string{"SSH_AUTH_SOCK", "S1"}}
		}, []want{{"/settings/extensions/alpha/pass_env/1", CodePassEnvSecret, E}}},
		{"settings pass_env names a connection's env secret", func(c *Config) {
			c.Settings.Extensions["alpha"] = ExtensionSettings{PassEnv: []string{"ALPHA_TOKEN"}}
		}, []want{{"/settings/extensions/alpha/pass_env/0", CodePassEnvSecret, E}}},
		{"settings pass_env invalid name", func(c *Config) {
			c.Settings.Extensions["alpha"] = ExtensionSettings{PassEnv: []string{"1BAD", "", "OK_1"}}
		}, []want{{"/settings/extensions/alpha/pass_env/0", CodeInvalidEnvName, E}, {"/settings/extensions/alpha/pass_env/1", CodeInvalidEnvName, E}}},
		{"settings for a package no one has", func(c *Config) { c.Settings.Extensions["gone"] = ExtensionSettings{} },
			[]want{{"/settings/extensions/gone", CodeUnknownExtension, W}}},
		{"settings concurrency zero", func(c *Config) { c.Settings.Concurrency = new(0) },
			[]want{{"/settings/concurrency", CodeInvalidLimit, E}}},
		{"settings job concurrency negative", func(c *Config) { c.Settings.JobConcurrency = new(-2) },
			[]want{{"/settings/job_concurrency", CodeInvalidLimit, E}}},
		{"settings concurrency one is fine", func(c *Config) { c.Settings.Concurrency, c.Settings.JobConcurrency = new(1), new(1) },
			nil},
		{"settings path escapes the package name", func(c *Config) { c.Settings.Extensions["a/b~c"] = ExtensionSettings{} },
			[]want{{"/settings/extensions/a~1b~0c", CodeUnknownExtension, W}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodConfig()
			tc.mutate(c)
			ps := Check(c, testPkgs())
			var got []want
			for _, p := range ps {
				got = append(got, want{p.Path, p.Code, p.Severity})
				if p.Message == "" {
					t.Errorf("%s has no message", p.Code)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v\nwant %v\nproblems:\n%v", got, tc.want, ps)
			}
		})
	}
}

func TestCheckReportsEveryProblemSorted(t *testing.T) {
	c := goodConfig()
	c.Scopes[0].Entries[1].Type = "gamma"
	c.Scopes[0].Routes[0].Handler = "gamma"
	c.Scopes[0].Bindings[0].Toolbelt = "telepathy"
	c.Connections[1].Type = "gamma"
	c.Settings.Extensions["gone"] = ExtensionSettings{PassEnv: []string{"OS_X"}}
	ps := Check(c, testPkgs())
	var codes []string
	for _, p := range ps {
		codes = append(codes, p.Code)
	}
	for _, code := range []string{CodeUnknownType, CodeUnknownHandler, CodeUnknownToolbelt, CodeUnknownConnectionType, CodeUnknownExtension, CodePassEnvReserved} {
		if !slices.Contains(codes, code) {
			t.Errorf("missing %s in %v", code, codes)
		}
	}
	if !slices.IsSortedFunc(ps, func(a, b Problem) int {
		return strings.Compare(a.Path+"\x00"+a.Code, b.Path+"\x00"+b.Code)
	}) {
		t.Errorf("problems are not sorted:\n%v", ps)
	}
	if n := len(ps.Errors()); n != len(ps)-1 {
		t.Errorf("want every problem but unknown_extension to be an error, got %d errors of %d", n, len(ps))
	}
}

// secretTargets are reference targets no message may quote.
var secretTargets = []string{"SUPER_SECRET_VAR", "/very/secret/path"}

func TestCheckNeverQuotesSecretTargets(t *testing.T) {
	c := goodConfig()
	s := &c.Scopes[0]
	s.SecretRefs["s1"] = "env:SUPER_SECRET_VAR"
	s.SecretRefs["s2"] = "file:/very/secret/path"
	s.SecretRefs["bad1"] = "vault:SUPER_SECRET_VAR"
	s.SecretRefs["bad2"] = "/very/secret/path"
	s.Bindings[0].PassEnv = []string{"SUPER_SECRET_VAR"}
	c.Connections[0].SecretRefs = map[string]string{
		"url":   "env:SUPER_SECRET_VAR",
		"other": "file:/very/secret/path",
		"token": "nonsense:/very/secret/path",
	}
	c.Settings.Extensions["gone"] = ExtensionSettings{PassEnv: []string{"SUPER_SECRET_VAR", "OS_SUPER_SECRET_VAR"}}
	ps := Check(c, testPkgs())
	codes := map[string]bool{}
	for _, p := range ps {
		codes[p.Code] = true
		for _, secret := range secretTargets {
			if strings.Contains(p.Message, secret) {
				t.Errorf("%s at %s quotes a secret target: %s", p.Code, p.Path, p.Message)
			}
		}
	}
	for _, code := range []string{CodeInvalidSecretRef, CodePassEnvSecret, CodePassEnvReserved, CodeUnknownSecretKey} {
		if !codes[code] {
			t.Errorf("expected a %s problem, got %v", code, ps)
		}
	}
	for _, secret := range secretTargets {
		if strings.Contains(ps.Error(), secret) {
			t.Errorf("Problems.Error quotes %s", secret)
		}
	}
}

func TestSettingsConcurrencyLimitsParseAndDefault(t *testing.T) {
	cases := []struct {
		name       string
		text       string
		agent, job int
	}{
		{"absent is the defaults", `{}`, DefaultConcurrency, DefaultJobConcurrency},
		{"given", `{"settings":{"concurrency":2,"job_concurrency":16}}`, 2, 16},
		{"one given, the other default", `{"settings":{"job_concurrency":1}}`, DefaultConcurrency, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Settings.ConcurrencyLimit(); got != tc.agent {
				t.Errorf("ConcurrencyLimit = %d, want %d", got, tc.agent)
			}
			if got := c.Settings.JobConcurrencyLimit(); got != tc.job {
				t.Errorf("JobConcurrencyLimit = %d, want %d", got, tc.job)
			}
		})
	}
	if _, err := Parse([]byte(`{"settings":{"concurrency":"4"}}`)); err == nil {
		t.Fatal("a string concurrency parsed; want invalid_type")
	}
}
