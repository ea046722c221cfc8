package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

// docPath is the operator's reference for the config file.
var docPath = filepath.Join("..", "..", "docs", "config.md")

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocExampleIsAValidConfig keeps the annotated example true: it parses
// and passes every offline rule against the packages it names.
func TestDocExampleIsAValidConfig(t *testing.T) {
	doc := readDoc(t)
	_, after, ok := strings.Cut(doc, "## An annotated example")
	_, block, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/config.md has no JSON block under \"## An annotated example\"")
	}
	c, err := config.Parse([]byte(block))
	if err != nil {
		t.Fatalf("the example does not parse:\n%v", err)
	}
	ms := []*protocol.Manifest{extensions.Served["hello"]().Manifest}
	files, _ := filepath.Glob(filepath.Join("..", "..", "protocol", "testdata", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := protocol.ParseAndValidateManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if ps := config.Check(c, ms); len(ps) != 0 {
		t.Fatalf("the example has problems:\n%v", ps)
	}
	// Negative control: without the packages it names, it does not pass.
	if ps := config.Check(c, ms[:1]); len(ps.Errors()) == 0 {
		t.Fatal("the example passed without the packages it names")
	}
}

// TestDocNamesEveryFieldAndCode keeps the reference complete: every member
// of the format and every problem code a check reports is named in it.
func TestDocNamesEveryFieldAndCode(t *testing.T) {
	doc := readDoc(t)
	var missing []string
	for _, name := range fieldNames(reflect.TypeFor[config.Config](), map[reflect.Type]bool{}) {
		if !strings.Contains(doc, "| `"+name+"` |") {
			missing = append(missing, "field "+name)
		}
	}
	codes := problemCodes(t, ".", filepath.Join("..", "validate"))
	if len(codes) < 30 {
		t.Fatalf("found only %d problem codes: %v", len(codes), codes)
	}
	for _, code := range codes {
		if !strings.Contains(doc, "| `"+code+"` |") {
			missing = append(missing, "code "+code)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/config.md does not have a table row for: %s", strings.Join(missing, ", "))
	}
}

// fieldNames are the JSON member names of t and the types it holds.
func fieldNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != reflect.TypeFor[config.Config]().PkgPath() {
		return nil
	}
	seen[t] = true
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
		out = append(out, fieldNames(f.Type, seen)...)
	}
	return out
}

// problemCodes are the values of the Code* string constants declared in
// the Go files of dirs.
func problemCodes(t *testing.T, dirs ...string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				vs, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, v)
					}
				}
				return true
			})
		}
	}
	return out
}
