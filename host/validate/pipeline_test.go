package validate_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/protocol"
)

// openConduit is the binary, built once: it serves hello as extension-run.
// binDir holds it and the probe package's executable.
var openConduit, binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oc-validate-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	openConduit = filepath.Join(dir, "open-conduit")
	code := 1
	if err := build(openConduit, "github.com/open-conduit/open-conduit"); err == nil {
		if err = build(filepath.Join(dir, "probe-extension"), "github.com/open-conduit/open-conduit/fixtures/probe/cmd/probe-extension"); err == nil {
			code = m.Run()
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build %s (the tests need the go command): %v\n", pkg, err)
	}
	return err
}

func helloManifest() *protocol.Manifest { return extensions.Served["hello"]().Manifest }

// acme is a package the tests start in no way: it declares one of each
// kind of name a config can reference.
func acme() *protocol.Manifest {
	return &protocol.Manifest{Name: "acme", Protocol: []int{1}, Command: []string{"acme-extension"}, Provides: protocol.Provides{
		Extensions:  []protocol.ExtensionType{{Type: "acme"}},
		Connections: []protocol.ConnectionType{{Type: "acme-api"}},
		Routes:      []protocol.Route{{Handler: "acme"}},
		Operations:  []protocol.Operation{{Name: "acme.do", Kind: protocol.OperationHandler}},
	}}
}

const acmeConfig = `{
  "scopes": [{
    "id": "s",
    "entries": [{"name": "a", "type": "acme", "connection": "c"}],
    "routes": [{"handler": "acme", "binding": "b"}],
    "bindings": [{"name": "b", "operations": ["read_context", "acme.do"]}],
    "connections": ["c"]
  }],
  "connections": [{"name": "c", "type": "acme-api"}]
}`

func TestRunRefusesObjectsOfAPackageThatCouldNotStart(t *testing.T) {
	why := protocol.Errorf(protocol.ErrKVDowngrade, "acme declares KV layout 1 but the store holds layout 2")
	refs := []string{"/connections/0/type", "/scopes/0/bindings/0/operations/1", "/scopes/0/entries/0/type", "/scopes/0/routes/0/handler"}
	cases := []struct {
		name    string
		in      validate.Input
		code    string // at every path in refs; "" for none
		message []string
	}{
		{"a package that could not start: its objects are unavailable, naming it and why",
			validate.Input{Failed: []validate.Failed{{Manifest: acme(), Err: why}}},
			validate.CodeExtensionUnavailable, []string{"acme", "kv_downgrade", "store holds layout 2"}},
		{"negative control: a package nobody has is unknown",
			validate.Input{}, "", nil},
		{"negative control: a running package's objects pass",
			validate.Input{Running: []*protocol.Manifest{acme()}}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Text = []byte(acmeConfig)
			g, ps := validate.Run(context.Background(), tc.in)
			at := map[string]config.Problem{}
			for _, p := range ps {
				at[p.Path] = p
			}
			switch {
			case tc.code != "":
				if g != nil || len(ps) != len(refs) {
					t.Fatalf("generation %v, problems:\n%v", g, ps)
				}
				for _, path := range refs {
					p := at[path]
					if p.Code != tc.code || p.Severity != config.Error || p.Line == 0 {
						t.Errorf("%s: %+v", path, p)
					}
					for _, w := range tc.message {
						if !strings.Contains(p.Message, w) {
							t.Errorf("%s: message %q does not say %q", path, p.Message, w)
						}
					}
				}
			case len(tc.in.Running) == 0:
				if p := at["/scopes/0/entries/0/type"]; p.Code != config.CodeUnknownType {
					t.Fatalf("want unknown_type, got:\n%v", ps)
				}
			default:
				if g == nil || len(ps) != 0 {
					t.Fatalf("generation %v, problems:\n%v", g, ps)
				}
			}
		})
	}
}

func TestRunParseErrorsComeBackWithLineAndColumn(t *testing.T) {
	text := "{\n  \"scopes\": [\n    {\"id\": \"s\", \"entrys\": []}\n  ]\n}"
	g, ps := validate.Run(context.Background(), validate.Input{Text: []byte(text), Running: []*protocol.Manifest{acme()}})
	if g != nil || len(ps) != 1 || ps[0].Code != config.CodeUnknownField || ps[0].Path != "/scopes/0/entrys" ||
		ps[0].Line != 3 || ps[0].Column != 17 || !strings.Contains(ps[0].Message, "line 3, column 17") {
		t.Fatalf("generation %v, problems %+v", g, ps)
	}
}

func TestRunAsksPackagesOnlyWhenTheRulesPass(t *testing.T) {
	var asked atomic.Int32
	ask := func(_ context.Context, a validate.Ask) config.Problems {
		asked.Add(1)
		if a.Manifest.Name != "hello" || len(a.Objects) != 1 || a.Objects[0].Path != "/scopes/0/entries/0/config" || a.Config == nil {
			t.Errorf("asked %s about %+v", a.Manifest.Name, a.Objects)
		}
		return config.Problems{{Path: a.Objects[0].Path, Code: validate.CodeConfigWarning, Severity: config.Warning, Message: "m"}}
	}
	in := validate.Input{Running: []*protocol.Manifest{helloManifest(), acme()}, Ask: ask}
	in.Text = []byte(`{"scopes":[{"id":"s","entries":[{"name":"h","type":"hello"},{"name":"x","type":"nope"}]}]}`)
	if g, ps := validate.Run(context.Background(), in); g != nil || asked.Load() != 0 || len(ps) != 1 {
		t.Fatalf("a config the rules refuse: generation %v, asked %d, problems %v", g, asked.Load(), ps)
	}
	// Negative control: once the rules pass, the package with objects
	// (hello; acme has none here) is asked, and its warning is kept.
	in.Text = []byte(`{"scopes":[{"id":"s","entries":[{"name":"h","type":"hello","config":{}}]}]}`)
	g, ps := validate.Run(context.Background(), in)
	if g == nil || asked.Load() != 1 || len(ps) != 1 || len(g.Problems) != 1 || g.Problems[0].Line == 0 {
		t.Fatalf("a good config: generation %v, asked %d, problems %v", g, asked.Load(), ps)
	}
}

func TestRunMakesAnUnnumberedGeneration(t *testing.T) {
	text := []byte(`{"scopes":[{"id":"s","entries":[{"name":"a","type":"acme"}]}]}`)
	cases := []struct {
		name, source, dir, wantDir string
	}{
		{"a file's directory anchors its file: references", "/etc/oc/config.json", "", "/etc/oc"},
		{"an explicit directory wins", "/etc/oc/config.json", "/srv/oc", "/srv/oc"},
		{"the embedded default has no file", "", "/home/op/.config/open-conduit", "/home/op/.config/open-conduit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ps := validate.Run(context.Background(), validate.Input{Text: text, Source: tc.source, Dir: tc.dir, Running: []*protocol.Manifest{acme()}})
			if g == nil || len(ps) != 0 {
				t.Fatalf("problems %v", ps)
			}
			if g.ID != 0 || g.Dir != tc.wantDir || g.Source != tc.source || string(g.Text) != string(text) || g.Hash != config.Hash(g.Config) {
				t.Fatalf("generation %+v", g)
			}
			if !g.For(acme()).Uses("s") {
				t.Error("the generation's projection does not see acme's scope")
			}
		})
	}
}

// TestOfflineStartsEachPackageForValidateAlone runs the pipeline as config
// check does: hello, a real process started for validate alone, refuses an
// entry it cannot use; a package whose command cannot start refuses its
// objects as unavailable, naming it.
func TestOfflineStartsEachPackageForValidateAlone(t *testing.T) {
	hello := helloManifest()
	broken := &protocol.Manifest{Name: "broken", Protocol: []int{1}, Command: []string{"broken-extension"},
		Provides: protocol.Provides{Extensions: []protocol.ExtensionType{{Type: "broken"}}}}
	pkgs := []discover.Package{
		{Name: "hello", Manifest: hello, Source: discover.Bundled, HostRun: true},
		{Name: "broken", Manifest: broken, Dir: t.TempDir(), Source: discover.Installed},
	}
	ask := validate.Offline(pkgs, validate.OfflineOptions{Self: openConduit})
	run := func(text string) (*config.Generation, config.Problems) {
		return validate.Run(context.Background(), validate.Input{Text: []byte(text), Running: []*protocol.Manifest{hello, broken}, Ask: ask})
	}

	g, ps := run("{\"scopes\": [{\"id\": \"s\", \"entries\": [\n" +
		"  {\"name\": \"h\", \"type\": \"hello\", \"config\": {\"colour\": \"red\"}},\n" +
		"  {\"name\": \"b\", \"type\": \"broken\"}]}]}")
	if g != nil || len(ps) != 2 {
		t.Fatalf("generation %v, problems:\n%v", g, ps)
	}
	if p := ps[0]; p.Path != "/scopes/0/entries/0/config" || p.Code != validate.CodeInvalidConfig || p.Line != 2 || !strings.Contains(p.Message, "hello refuses") {
		t.Errorf("hello's refusal: %+v", p)
	}
	if p := ps[1]; p.Path != "/scopes/0/entries/1/config" || p.Code != validate.CodeExtensionUnavailable || !strings.Contains(p.Message, "broken") {
		t.Errorf("the broken package: %+v", p)
	}

	// Negative control: an entry hello accepts passes, and the broken
	// package, with no objects, is never started.
	g, ps = run(`{"scopes": [{"id": "s", "entries": [{"name": "h", "type": "hello", "config": {"greeting": "hi"}}]}]}`)
	if g == nil || len(ps) != 0 {
		t.Fatalf("a config hello accepts: generation %v, problems:\n%v", g, ps)
	}
}

// TestRunNamesThePackageWhoseValidateHung: acme's validate never answers
// and hello's does at once; the validation ends at the deadline, and its
// problem is at acme's object, naming acme, while hello's object has none.
func TestRunNamesThePackageWhoseValidateHung(t *testing.T) {
	hangs := func(ctx context.Context, _ protocol.ValidateParams) (protocol.ValidateResult, error) {
		<-ctx.Done()
		return protocol.ValidateResult{}, ctx.Err()
	}
	answers := func(context.Context, protocol.ValidateParams) (protocol.ValidateResult, error) {
		return protocol.ValidateResult{}, nil
	}
	run := func(acmeCaller validate.Caller) (*config.Generation, config.Problems) {
		ask := func(ctx context.Context, a validate.Ask) config.Problems {
			if a.Manifest.Name == "acme" {
				return validate.With(ctx, "acme", acmeCaller, a.Objects)
			}
			return validate.With(ctx, a.Manifest.Name, answers, a.Objects)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		text := `{"scopes":[{"id":"s","entries":[{"name":"h","type":"hello","config":{}},{"name":"a","type":"acme"},{"name":"b","type":"acme"}]}]}`
		return validate.Run(ctx, validate.Input{Text: []byte(text), Running: []*protocol.Manifest{helloManifest(), acme()}, Ask: ask})
	}
	g, ps := run(hangs)
	if g != nil || len(ps) != 2 {
		t.Fatalf("generation %v, problems:\n%v", g, ps)
	}
	for i, p := range ps {
		if want := fmt.Sprintf("/scopes/0/entries/%d/config", i+1); p.Path != want || p.Code != validate.CodeExtensionUnavailable ||
			!strings.HasPrefix(p.Message, "acme did not answer validate within") || strings.Contains(p.Message, "hello") {
			t.Errorf("problem %d: %+v", i, p)
		}
	}
	// Negative control: acme answering, the same config passes.
	if g, ps := run(answers); g == nil || len(ps) != 0 {
		t.Fatalf("acme answering: generation %v, problems:\n%v", g, ps)
	}
}

// TestOfflineRouteHandlerRefusesTheBindingItsRouteBinds runs the pipeline
// as config check does, with the probe a real process: its route handler
// checks the binding its route binds and refuses one whose config sets
// probe_refuse. That refusal is binding_refused at the route's binding,
// naming the handler and the binding; a refused route stays
// invalid_config.
func TestOfflineRouteHandlerRefusesTheBindingItsRouteBinds(t *testing.T) {
	m := probe.Extension().Manifest
	ask := validate.Offline([]discover.Package{{Name: probe.Name, Manifest: m, Dir: binDir, Source: discover.Installed}},
		validate.OfflineOptions{Self: openConduit, Timeout: 60 * time.Second})
	refuse := `{"` + probe.Refuse + `": true}`
	text := func(handler, routeConfig, bindingConfig string) string {
		return `{"scopes": [{"id": "s",
  "routes": [{"handler": "manual"}, {"handler": "` + handler + `", "binding": "b", "config": ` + routeConfig + `}],
  "bindings": [{"name": "b", "config": ` + bindingConfig + `, "pass_env": ["HOME"]}]}]}`
	}
	cases := []struct {
		name       string
		text       string
		path, code string // "" for no problem
		message    []string
	}{
		{"the handler refuses the binding: binding_refused at the route's binding",
			text(probe.RouteHandler, `{}`, refuse), "/scopes/0/routes/1/binding", validate.CodeBindingRefused,
			[]string{"route handler " + probe.RouteHandler, `binding "b"`, "package probe", "sets " + probe.Refuse}},
		{"the handler refuses the route's own config: invalid_config at the route's config",
			text(probe.RouteHandler, refuse, `{}`), "/scopes/0/routes/1/config", validate.CodeInvalidConfig,
			[]string{"probe refuses", "sets " + probe.Refuse}},
		{"negative control: a binding the handler accepts", text(probe.RouteHandler, `{}`, `{"model": "m"}`), "", "", nil},
		{"negative control: the same binding routed to manual is not the probe's to check", text("manual", `{}`, refuse), "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ps := validate.Run(context.Background(), validate.Input{Text: []byte(tc.text), Running: []*protocol.Manifest{m}, Ask: ask})
			if tc.code == "" {
				if g == nil || len(ps) != 0 {
					t.Fatalf("generation %v, problems:\n%v", g, ps)
				}
				return
			}
			if g != nil || len(ps) != 1 {
				t.Fatalf("generation %v, problems:\n%v", g, ps)
			}
			p := ps[0]
			if p.Path != tc.path || p.Code != tc.code || p.Severity != config.Error || p.Line == 0 {
				t.Fatalf("problem %+v", p)
			}
			for _, w := range tc.message {
				if !strings.Contains(p.Message, w) {
					t.Errorf("message %q does not say %q", p.Message, w)
				}
			}
		})
	}
	if validate.CodeBindingRefused != protocol.CodeBindingRefused {
		t.Errorf("code %q is not the diagnostic %q", validate.CodeBindingRefused, protocol.CodeBindingRefused)
	}
}
