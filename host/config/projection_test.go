package config

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// projectionConfig names alpha's connections in every way the projection
// distinguishes: by its entries and by bindings, granted and not, in an
// enabled scope, a disabled one and one where alpha has no entry.
func projectionConfig() *Config {
	return &Config{
		Connections: []Connection{
			{Name: "a-main", Type: "alpha", Config: jsontext.Value(`{"url":"https://a.example"}`),
				SecretRefs: map[string]string{"token": "env:SUPER_SECRET_VAR", "extra": "env:A_EXTRA"}},
			{Name: "a-bound", Type: "alpha", SecretRefs: map[string]string{"token": "file:/very/secret/path"}},
			{Name: "a-ungranted", Type: "alpha", SecretRefs: map[string]string{"token": "env:UNGRANTED"}},
			{Name: "a-elsewhere", Type: "alpha", SecretRefs: map[string]string{"token": "env:ELSEWHERE"}},
			{Name: "a-loose", Type: "alpha", SecretRefs: map[string]string{"token": "env:LOOSE"}},
			{Name: "b-main", Type: "beta", SecretRefs: map[string]string{"key": "env:BETA"}},
		},
		Scopes: []Scope{{
			ID: "zeta",
			Entries: []Entry{
				{Name: "a1", Type: "alpha", Connection: "a-main", Config: jsontext.Value(`{"k":1}`), Secrets: []string{"s1", "shared"}},
				{Name: "b1", Type: "beta", Connection: "b-main", Secrets: []string{"s2", "shared"}},
				{Name: "a2", Type: "alpha", Connection: "a-ungranted"},
			},
			Routes: []Route{{Handler: "alpha", Binding: "run"}, {Handler: ManualHandler}},
			Bindings: []Binding{
				{Name: "run", Executor: "alpha", Toolbelt: "cli", Operations: []string{"alpha.do"}, Connection: "a-bound",
					Config: jsontext.Value(`{"hidden":true}`), PassEnv: []string{"HIDDEN"}},
				{Name: "beta-run", Connection: "b-main"},
				{Name: "loose", Connection: "a-ungranted"},
			},
			SecretRefs:  map[string]string{"s1": "env:S1", "s2": "env:S2", "shared": "file:/shared", "unused": "env:UNUSED"},
			Connections: []string{"a-main", "a-bound", "b-main", "a-loose"},
		}, {
			ID: "off", Disabled: true,
			Entries:     []Entry{{Name: "a3", Type: "alpha", Connection: "a-main"}},
			Connections: []string{"a-main"},
		}, {
			ID:          "other",
			Bindings:    []Binding{{Name: "run", Connection: "a-elsewhere"}},
			Connections: []string{"a-elsewhere"},
		}, {
			ID:      "beta-only",
			Entries: []Entry{{Name: "b2", Type: "beta"}},
		}, {
			ID: "empty",
		}},
	}
}

// wire is v as the daemon sends it, so a comparison sees what a package
// would.
func wire(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProjectionConfigureContent(t *testing.T) {
	pkgs := testPkgs()
	alpha, beta := pkgs[0], pkgs[1]
	cases := []struct {
		name string
		c    *Config
		m    *protocol.Manifest
		want string
	}{
		{"alpha: entries with their granted connection and the scope's binding connections; disabled apart; not a connection only a binding names where alpha has no entry",
			projectionConfig(), alpha,
			`{"generation":{"id":0},` +
				`"entries":[` +
				`{"scope":"zeta","type":"alpha","name":"a1","config":{"k":1},"connection":"a-main","binding_connections":["a-bound"]},` +
				`{"scope":"zeta","type":"alpha","name":"a2","binding_connections":["a-bound"]}],` +
				`"connections":[` +
				`{"name":"a-main","type":"alpha","config":{"url":"https://a.example"},"secrets":["extra","token"]},` +
				`{"name":"a-bound","type":"alpha","secrets":["token"]}],` +
				`"disabled":[{"scope":"off","type":"alpha","name":"a3","connection":"a-main"}],` +
				`"kv":{"stored":0,"declared":0}}`},
		{"beta: never alpha's connections", projectionConfig(), beta,
			`{"generation":{"id":0},` +
				`"entries":[` +
				`{"scope":"zeta","type":"beta","name":"b1","connection":"b-main","binding_connections":["b-main"]},` +
				`{"scope":"beta-only","type":"beta","name":"b2"}],` +
				`"connections":[{"name":"b-main","type":"beta","secrets":["key"]}],` +
				`"kv":{"stored":0,"declared":0}}`},
		{"a package with no types sees nothing", projectionConfig(), pkg("gamma", handler("gamma")),
			`{"generation":{"id":0},"kv":{"stored":0,"declared":0}}`},
		{"no config", nil, alpha, `{"generation":{"id":0},"kv":{"stored":0,"declared":0}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire(t, Project(tc.c, tc.m).Configure()); got != tc.want {
				t.Errorf("configure\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestProjectionScopesUsingThePackage(t *testing.T) {
	pkgs := testPkgs()
	alpha, beta := pkgs[0], pkgs[1]
	c := &Config{
		Connections: []Connection{{Name: "ac", Type: "alpha"}, {Name: "bc", Type: "beta"}},
		Scopes: []Scope{
			{ID: "entry", Entries: []Entry{{Name: "a", Type: "alpha"}}},
			{ID: "route", Routes: []Route{{Handler: "alpha"}}},
			{ID: "operation", Bindings: []Binding{{Name: "b", Operations: []string{"read_context", "alpha.do"}}}},
			{ID: "executor", Bindings: []Binding{{Name: "b", Executor: "alpha"}}},
			{ID: "binding-connection", Bindings: []Binding{{Name: "b", Connection: "ac"}}},
			{ID: "entry-connection", Entries: []Entry{{Name: "b", Type: "beta", Connection: "ac"}}},
			{ID: "granted-connection", Connections: []string{"ac"}},
			{ID: "disabled", Disabled: true, Entries: []Entry{{Name: "a", Type: "alpha"}}},
			{ID: "beta-only", Entries: []Entry{{Name: "b", Type: "beta", Connection: "bc"}},
				Routes: []Route{{Handler: ManualHandler}}, Bindings: []Binding{{Name: "b", Operations: []string{"read_context"}}}},
			{ID: "undefined-connection", Connections: []string{"nope"}},
			{ID: "entry", Routes: []Route{{Handler: "alpha"}}},
		},
	}
	cases := []struct {
		name string
		m    *protocol.Manifest
		want []ScopeUse
	}{
		{"alpha, by every kind of use, sorted, the disabled one marked", alpha, []ScopeUse{
			{ID: "binding-connection"}, {ID: "disabled", Disabled: true}, {ID: "entry"}, {ID: "entry-connection"},
			{ID: "executor"}, {ID: "granted-connection"}, {ID: "operation"}, {ID: "route"},
		}},
		{"beta, by its entries alone", beta, []ScopeUse{{ID: "beta-only"}, {ID: "entry-connection"}}},
		{"no package", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Project(c, tc.m)
			if !slices.Equal(p.Scopes(), tc.want) {
				t.Fatalf("scopes %v, want %v", p.Scopes(), tc.want)
			}
			for _, s := range tc.want {
				if !p.Uses(s.ID) || !slices.Contains(p.ScopeIDs(), s.ID) {
					t.Errorf("Uses(%q) is false", s.ID)
				}
			}
			for _, not := range []string{"undefined-connection", "nope", ""} {
				if p.Uses(not) {
					t.Errorf("Uses(%q) is true", not)
				}
			}
		})
	}
	if Project(nil, alpha).Uses("entry") {
		t.Error("no config uses nothing")
	}
}

func TestProjectionViews(t *testing.T) {
	alpha := testPkgs()[0]
	p := Project(projectionConfig(), alpha)
	cases := []struct {
		scope string
		want  string
	}{
		{"zeta", `{"id":"zeta",` +
			`"entries":[{"scope":"zeta","type":"alpha","name":"a1","config":{"k":1},"connection":"a-main"},` +
			`{"scope":"zeta","type":"alpha","name":"a2","connection":"a-ungranted"}],` +
			`"routes":[{"handler":"alpha","binding":"run"},{"handler":"manual"}],` +
			`"bindings":[{"name":"run","executor":"alpha","toolbelt":"cli","operations":["alpha.do"],"connection":"a-bound"},` +
			`{"name":"beta-run","connection":"b-main"},{"name":"loose","connection":"a-ungranted"}]}`},
		{"off", `{"id":"off","disabled":true,"entries":[{"scope":"off","type":"alpha","name":"a3","connection":"a-main"}]}`},
		{"other", `{"id":"other","bindings":[{"name":"run","connection":"a-elsewhere"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.scope, func(t *testing.T) {
			v, ok := p.View(tc.scope)
			if got := wire(t, v); !ok || got != tc.want {
				t.Errorf("view %v\n got %s\nwant %s", ok, got, tc.want)
			}
			for _, hidden := range []string{"hidden", "HIDDEN", "env:", "file:"} {
				if strings.Contains(wire(t, v), hidden) {
					t.Errorf("the view shows %q", hidden)
				}
			}
		})
	}
	for _, scope := range []string{"beta-only", "empty", "nope"} {
		if v, ok := p.View(scope); ok {
			t.Errorf("view of %s, which does not use alpha: %+v", scope, v)
		}
	}
	var ids []string
	for _, v := range p.Views() {
		ids = append(ids, v.ID)
	}
	if want := []string{"off", "other", "zeta"}; !slices.Equal(ids, want) {
		t.Errorf("views %v, want %v", ids, want)
	}
}

func TestProjectionObjectsAreThePackagesOwnWithTheirPaths(t *testing.T) {
	pkgs := testPkgs()
	cases := []struct {
		m    *protocol.Manifest
		want []string
	}{
		{pkgs[0], []string{
			"/scopes/0/entries/0/config extension alpha a1 zeta",
			"/scopes/0/entries/2/config extension alpha a2 zeta",
			"/scopes/0/routes/0/config route alpha  zeta",
			"/scopes/1/entries/0/config extension alpha a3 off",
			"/connections/0/config connection alpha a-main ",
			"/connections/1/config connection alpha a-bound ",
			"/connections/2/config connection alpha a-ungranted ",
			"/connections/3/config connection alpha a-elsewhere ",
			"/connections/4/config connection alpha a-loose ",
		}},
		{pkgs[1], []string{
			"/scopes/0/entries/1/config extension beta b1 zeta",
			"/scopes/3/entries/0/config extension beta b2 beta-only",
			"/connections/5/config connection beta b-main ",
		}},
		{pkg("gamma", handler("gamma")), nil},
	}
	for _, tc := range cases {
		t.Run(tc.m.Name, func(t *testing.T) {
			var got []string
			for _, o := range Project(projectionConfig(), tc.m).Objects() {
				got = append(got, strings.Join([]string{o.Path, o.Params.Kind, o.Params.Type, o.Params.Name, o.Params.Scope}, " "))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("objects\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	objs := Project(projectionConfig(), pkgs[0]).Objects()
	if string(objs[0].Params.Config) != `{"k":1}` || string(objs[4].Params.Config) != `{"url":"https://a.example"}` {
		t.Errorf("objects carry their config: %+v", objs)
	}
}

// routesConfig has routes on handlers of every sort the projection tells
// apart, in an enabled scope and a disabled one.
func routesConfig() *Config {
	return &Config{Scopes: []Scope{{
		ID: "s",
		Routes: []Route{
			{Handler: "checker", Binding: "run", Config: jsontext.Value(`{"q":1}`)},
			{Handler: "plain", Binding: "run", Config: jsontext.Value(`{"p":2}`)},
			{Handler: "foreign", Binding: "run"},
			{Handler: "checker", Binding: "ghost"},
			{Handler: "checker"},
			{Handler: ManualHandler, Binding: "run"},
		},
		Bindings: []Binding{{Name: "run", Executor: "exec", Toolbelt: "cli", Operations: []string{"read_context"}, Connection: "c",
			Config: jsontext.Value(`{"model":"m"}`), PassEnv: []string{"HIDDEN_VAR"}}},
	}, {
		ID: "off", Disabled: true,
		Routes:   []Route{{Handler: "checker", Binding: "b2"}},
		Bindings: []Binding{{Name: "b2"}},
	}}}
}

func TestProjectionObjectsIncludeRoutesAndTheBindingsTheirHandlersCheck(t *testing.T) {
	routes := func(rs ...protocol.Route) func(*protocol.Provides) {
		return func(p *protocol.Provides) { p.Routes = append(p.Routes, rs...) }
	}
	const run = `{"name":"run","executor":"exec","toolbelt":"cli","operations":["read_context"],"connection":"c","config":{"model":"m"}}`
	cases := []struct {
		name string
		m    *protocol.Manifest
		want []string
	}{
		{"its routes with their config; the binding of a route on its checking handler, when the scope defines it; disabled scopes too",
			pkg("pkg", routes(protocol.Route{Handler: "checker", Binding: true}, protocol.Route{Handler: "plain"})), []string{
				`/scopes/0/routes/0/config {"kind":"route","type":"checker","config":{"q":1},"scope_id":"s"}`,
				`/scopes/0/routes/0/binding {"kind":"binding","type":"checker","config":` + run + `,"scope_id":"s","name":"run"}`,
				`/scopes/0/routes/1/config {"kind":"route","type":"plain","config":{"p":2},"scope_id":"s"}`,
				`/scopes/0/routes/3/config {"kind":"route","type":"checker","scope_id":"s"}`,
				`/scopes/0/routes/4/config {"kind":"route","type":"checker","scope_id":"s"}`,
				`/scopes/1/routes/0/config {"kind":"route","type":"checker","scope_id":"off"}`,
				`/scopes/1/routes/0/binding {"kind":"binding","type":"checker","config":{"name":"b2"},"scope_id":"off","name":"b2"}`,
			}},
		{"negative control: the same handler without binding:true is asked about its routes alone",
			pkg("pkg", routes(protocol.Route{Handler: "checker"})), []string{
				`/scopes/0/routes/0/config {"kind":"route","type":"checker","config":{"q":1},"scope_id":"s"}`,
				`/scopes/0/routes/3/config {"kind":"route","type":"checker","scope_id":"s"}`,
				`/scopes/0/routes/4/config {"kind":"route","type":"checker","scope_id":"s"}`,
				`/scopes/1/routes/0/config {"kind":"route","type":"checker","scope_id":"off"}`,
			}},
		{"another package's checking handler: its own route only",
			pkg("foreign", routes(protocol.Route{Handler: "foreign", Binding: true})), []string{
				`/scopes/0/routes/2/config {"kind":"route","type":"foreign","scope_id":"s"}`,
				`/scopes/0/routes/2/binding {"kind":"binding","type":"foreign","config":` + run + `,"scope_id":"s","name":"run"}`,
			}},
		{"a package with no route handler: none", pkg("exec", executor("exec")), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, o := range Project(routesConfig(), tc.m).Objects() {
				got = append(got, o.Path+" "+wire(t, o.Params))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("objects\n got %q\nwant %q", got, tc.want)
			}
			for _, hidden := range []string{"HIDDEN_VAR", "pass_env"} {
				if strings.Contains(strings.Join(got, " "), hidden) {
					t.Errorf("a binding object carries %q", hidden)
				}
			}
		})
	}
}

func TestProjectionSecretRefs(t *testing.T) {
	pkgs := testPkgs()
	alpha, beta := pkgs[0], pkgs[1]
	gamma := pkg("gamma", connType("alpha-like"))
	c := projectionConfig()
	cases := []struct {
		name       string
		m          *protocol.Manifest
		scope      string
		connection string
		want       map[string]string
	}{
		{"alpha's entries select s1 and shared", alpha, "zeta", "", map[string]string{"s1": "env:S1", "shared": "file:/shared"}},
		{"beta's entries select s2 and shared, never alpha's s1", beta, "zeta", "", map[string]string{"s2": "env:S2", "shared": "file:/shared"}},
		{"a connection alpha's entry names", alpha, "zeta", "a-main", map[string]string{"token": "env:SUPER_SECRET_VAR", "extra": "env:A_EXTRA"}},
		{"a connection the binding of a scope with alpha's entry names", alpha, "zeta", "a-bound", map[string]string{"token": "file:/very/secret/path"}},
		{"beta's own connection", beta, "zeta", "b-main", map[string]string{"key": "env:BETA"}},
		{"a disabled scope is not refused", alpha, "off", "a-main", map[string]string{"token": "env:SUPER_SECRET_VAR", "extra": "env:A_EXTRA"}},
		{"entries that select nothing resolve nothing", alpha, "off", "", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Project(c, tc.m).SecretRefs(tc.scope, tc.connection)
			if err != nil {
				t.Fatal(err)
			}
			if wire(t, got) != wire(t, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	refusals := []struct {
		name       string
		m          *protocol.Manifest
		scope      string
		connection string
	}{
		{"connection not granted by the scope", alpha, "zeta", "a-ungranted"},
		{"connection granted but named by no entry or binding", alpha, "zeta", "a-loose"},
		{"connection of another package's type", alpha, "zeta", "b-main"},
		{"connection of another package's type, the other way", beta, "zeta", "a-main"},
		{"connection not configured", alpha, "zeta", "nope"},
		{"scope not configured", alpha, "nope", ""},
		{"scope without the package's entries", alpha, "empty", ""},
		{"a binding's connection in a scope without the package's entries", alpha, "other", "a-elsewhere"},
		{"the scope's secrets where only a binding names its connection", alpha, "other", ""},
		{"package with no entries in the scope", gamma, "zeta", ""},
		{"package whose type the connection is not", gamma, "zeta", "a-main"},
		{"no package", nil, "zeta", ""},
	}
	for _, tc := range refusals {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			got, err := Project(c, tc.m).SecretRefs(tc.scope, tc.connection)
			if !errors.Is(err, protocol.ErrUnauthorized) {
				t.Fatalf("got %v, %v; want unauthorized", got, err)
			}
			if got != nil {
				t.Errorf("refusal returned refs %v", got)
			}
			for _, secret := range append(secretTargets, "env:", "file:") {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error quotes reference text %q: %v", secret, err)
				}
			}
		})
	}
	if _, err := Project(nil, alpha).SecretRefs("zeta", ""); !errors.Is(err, protocol.ErrUnauthorized) {
		t.Errorf("nil config: %v", err)
	}
}

// TestSecretRefsNeedAnEntryInTheScope: a binding's connection resolves
// only in a scope where the package has one of its entries.
func TestSecretRefsNeedAnEntryInTheScope(t *testing.T) {
	alpha := testPkgs()[0]
	c := projectionConfig()
	if refs, err := Project(c, alpha).SecretRefs("other", "a-elsewhere"); !errors.Is(err, protocol.ErrUnauthorized) {
		t.Fatalf("a binding's connection without an entry: %v, %v", refs, err)
	}
	// Negative control: the same scope with an entry of alpha's resolves it.
	c.Scopes[2].Entries = []Entry{{Name: "a4", Type: "alpha"}}
	refs, err := Project(c, alpha).SecretRefs("other", "a-elsewhere")
	if err != nil || refs["token"] != "env:ELSEWHERE" {
		t.Fatalf("with an entry: %v, %v", refs, err)
	}
}

func TestProjectionSecretRefsAreTheCallersCopy(t *testing.T) {
	c := projectionConfig()
	p := Project(c, testPkgs()[0])
	for _, conn := range []string{"", "a-main"} {
		refs, err := p.SecretRefs("zeta", conn)
		if err != nil {
			t.Fatal(err)
		}
		for k := range refs {
			refs[k] = "env:CHANGED"
		}
	}
	again, _ := p.SecretRefs("zeta", "")
	if c.Scopes[0].SecretRefs["s1"] != "env:S1" || c.Connections[0].SecretRefs["token"] != "env:SUPER_SECRET_VAR" || again["s1"] != "env:S1" {
		t.Error("changing the result changed the config or the projection")
	}
}

// TestGenerationProjectionsAreComputedOnceAndShared reads one generation's
// projections from many goroutines at once (run with -race): each package's
// is computed once and every reader gets that one.
func TestGenerationProjectionsAreComputedOnceAndShared(t *testing.T) {
	pkgs := testPkgs()
	g := &Generation{ID: 7, Config: projectionConfig()}
	const readers = 64
	got := make([]*Projection, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := g.For(pkgs[i%2])
			_ = p.Configure()
			_ = p.Views()
			_, _ = p.View("zeta")
			_ = p.Objects()
			_ = p.Uses("zeta")
			_, _ = p.SecretRefs("zeta", "")
			got[i] = p
		}()
	}
	wg.Wait()
	for i, p := range got {
		if p != got[i%2] {
			t.Fatalf("reader %d got another projection of %s", i, pkgs[i%2].Name)
		}
	}
	if got[0] == got[1] {
		t.Fatal("alpha and beta share a projection")
	}
	// Negative control: projecting again computes a new, equal one.
	fresh := Project(g.Config, pkgs[0])
	if fresh == got[0] || wire(t, fresh.Configure()) != wire(t, got[0].Configure()) {
		t.Error("Project did not compute an equal projection of its own")
	}
	numbered := g.WithID(8)
	if numbered.ID != 8 || g.ID != 7 || numbered.For(pkgs[0]) != got[0] || numbered.Config != g.Config {
		t.Errorf("WithID: %d (was %d), same projection %v", numbered.ID, g.ID, numbered.For(pkgs[0]) == got[0])
	}
	var none *Generation
	if p := none.For(pkgs[0]); len(p.ScopeIDs()) != 0 {
		t.Error("a nil generation projects scopes")
	}
}
