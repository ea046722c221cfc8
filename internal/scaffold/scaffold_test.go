package scaffold

import (
	"context"
	"errors"
	"go/format"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestCheckNameRefusesWhatTheHostWouldRefuse: a name the manifest rules,
// the host's own names or a served package rule out is refused, saying
// what to change; an ordinary name passes.
func TestCheckNameRefusesWhatTheHostWouldRefuse(t *testing.T) {
	tests := []struct {
		name, pkg string
		want      string // "" accepts
	}{
		{"an ordinary name", "weather", ""},
		{"a name with a dash", "acme-tickets", ""},
		{"upper case", "Weather", "is not an identifier"},
		{"a leading digit", "9lives", "is not an identifier"},
		{"a dot", "a.b", "is not an identifier"},
		{"empty", "", "needs a NAME"},
		{"a reserved name", "core", "registers itself"},
		{"the host's route handler", "manual", "registers itself"},
		{"a builtin operation", "read_context", "registers itself"},
		{"a served package", "hello", "serves itself"},
		{"too long", strings.Repeat("a", 65), "at most 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckName(tt.pkg, []string{"hello"})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestValidateRefusesADirectoryThatIsNotEmpty: an existing empty directory
// or a missing one is fine; a non-empty one or a file is refused.
func TestValidateRefusesADirectoryThatIsNotEmpty(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, ".keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, module string
		want              string
	}{
		{"missing", filepath.Join(root, "new"), "", ""},
		{"empty", empty, "", ""},
		{"holds a hidden file", full, "", "is not empty"},
		{"a file", file, "", "is a file"},
		{"a module path with a space", filepath.Join(root, "m"), "example.com/a b", "is not a module path"},
		{"a module path with an empty element", filepath.Join(root, "m"), "example.com//a", "is not a module path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Name: "weather", Dir: tt.dir, Module: tt.module, Version: "v1.0.0"}
			err := Validate(&o)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestValidateNeedsAVersionOrACheckout: with no version to require and no
// --replace there is nothing to build against; a checkout must be one.
func TestValidateNeedsAVersionOrACheckout(t *testing.T) {
	o := Options{Name: "weather", Dir: filepath.Join(t.TempDir(), "w")}
	if err := Validate(&o); !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("no version, no checkout: %v", err)
	}
	o = Options{Name: "weather", Dir: filepath.Join(t.TempDir(), "w"), Replace: t.TempDir()}
	if err := Validate(&o); err == nil || !strings.Contains(err.Error(), "not an Open Conduit checkout") {
		t.Fatalf("a checkout with no go.mod: %v", err)
	}
	o = Options{Name: "weather", Dir: filepath.Join(t.TempDir(), "w"), Replace: "../.."}
	if err := Validate(&o); err != nil || !filepath.IsAbs(o.Replace) || o.Module != "example.com/weather" {
		t.Fatalf("negative control, this checkout: %v %+v", err, o)
	}
}

// TestRequireVersionNamesTheBuild: a release's stamped version, a module
// version from the module cache, a clean commit as a pseudo-version; a
// build that cannot say which commit it is gets ErrUnknownVersion.
func TestRequireVersionNamesTheBuild(t *testing.T) {
	vcs := func(rev, stamp, modified string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}}
		for k, v := range map[string]string{"vcs.revision": rev, "vcs.time": stamp, "vcs.modified": modified} {
			if v != "" {
				info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
			}
		}
		return info
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name    string
		info    *debug.BuildInfo
		release string
		want    string // "" wants ErrUnknownVersion
	}{
		{"a release", nil, "1.4.0", "v1.4.0"},
		{"a release with its v", nil, "v1.4.0-rc.1", "v1.4.0-rc.1"},
		{"from the module cache", &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v1.2.3"}}, "dev", "v1.2.3"},
		{"a clean commit", vcs(rev, "2026-03-04T05:06:07Z", "false"), "dev", "v0.0.0-20260304050607-0123456789ab"},
		{"a dirty module version", &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.0.0-20260304050607-0123456789ab+dirty"}}, "dev", ""},
		{"a modified checkout", vcs(rev, "2026-03-04T05:06:07Z", "true"), "dev", ""},
		{"no vcs information", vcs("", "", ""), "dev", ""},
		{"no build information", nil, "dev", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequireVersion(tt.info, tt.release)
			if tt.want == "" {
				if !errors.Is(err, ErrUnknownVersion) {
					t.Fatalf("got %q, %v; want ErrUnknownVersion", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if got := PseudoVersion(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), rev); got != "v0.0.0-20260102020405-0123456789ab" {
		t.Fatalf("the pseudo-version's time is not UTC: %s", got)
	}
}

// TestGoVersionIsTheModulesOwn: a new package's go directive is the one
// Open Conduit's go.mod has, so it never asks for less than the module
// it requires needs.
func TestGoVersionIsTheModulesOwn(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\ngo "+GoVersion+"\n") {
		t.Fatalf("GoVersion %s is not the go directive of go.mod", GoVersion)
	}
}

// TestCreateFromACheckoutKeepsItsFilesWhenTidyCannotFetch: with --replace
// and the module proxy unreachable (GOPROXY=off, an empty module cache),
// the tidy failure is reported and go.mod and go.sum are the checkout's;
// the templates are written and gofmt-clean.
func TestCreateFromACheckoutKeepsItsFilesWhenTidyCannotFetch(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("GOMODCACHE", t.TempDir())
	o := Options{Name: "weather", Dir: filepath.Join(t.TempDir(), "weather"), Replace: "../.."}
	if err := Validate(&o); err != nil {
		t.Fatal(err)
	}
	res, err := Create(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.TidyProblem == "" || !strings.Contains(res.TidyProblem, "go mod tidy") {
		t.Fatalf("the tidy failure is not reported: %+v", res)
	}
	mod, _ := os.ReadFile(filepath.Join(o.Dir, "go.mod"))
	for _, want := range []string{"module example.com/weather", "require " + ModulePath + " " + replacedVersion,
		"tool " + ModulePath, "replace " + ModulePath + " => " + o.Replace, "github.com/cockroachdb/pebble/v2 v2.1.7 // indirect"} {
		if !strings.Contains(string(mod), want) {
			t.Fatalf("go.mod lacks %q:\n%s", want, mod)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(o.Dir, "go.sum"))
	own, _ := os.ReadFile("../../go.sum")
	if string(sum) != string(own) {
		t.Fatal("go.sum is not the checkout's")
	}
	main, _ := os.ReadFile(filepath.Join(o.Dir, "main.go"))
	for _, want := range []string{`sdk.New("weather"`, `"weather.hello"`, "func main() { sdk.Main(Extension()) }"} {
		if !strings.Contains(string(main), want) {
			t.Fatalf("main.go lacks %q", want)
		}
	}
	for _, f := range []string{".gitignore", "Makefile", "README.md", "certification.json", "main_test.go"} {
		if _, err := os.Stat(filepath.Join(o.Dir, f)); err != nil {
			t.Fatalf("%s missing: %v", f, err)
		}
	}
}

// TestTemplatesRenderForTheName: the certification fixture parses under
// the fixture rules and its cases call NAME.hello; every Go file is
// gofmt-clean; no template is left with an action unfilled.
func TestTemplatesRenderForTheName(t *testing.T) {
	files, err := render(Options{Name: "acme-tickets", Module: "example.com/acme"}, "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := protocol.ParseCertification(files["certification.json"])
	if err != nil {
		t.Fatalf("certification.json: %v", err)
	}
	if f.Fixture == nil || len(f.Fixture.Operations) == 0 {
		t.Fatalf("certification.json has no operation case: %s", files["certification.json"])
	}
	for _, c := range f.Fixture.Operations {
		if c.Operation != "acme-tickets.hello" {
			t.Fatalf("a case calls %q, not the package's operation", c.Operation)
		}
	}
	for name, data := range files {
		if strings.Contains(string(data), "{{") {
			t.Fatalf("%s holds an unfilled template action", name)
		}
		if strings.HasSuffix(name, ".go") {
			if out, err := format.Source(data); err != nil || string(out) != string(data) {
				t.Fatalf("%s is not gofmt-clean: %v", name, err)
			}
		}
	}
	if !strings.Contains(string(files["Makefile"]), "\n\t$(GO) tool open-conduit extension check $(DIST)\n") {
		t.Fatalf("the Makefile's recipes lost their tabs or its extension check:\n%s", files["Makefile"])
	}
}
