package protocol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEveryDescriptorNamesACataloguedMethod: a descriptor binds a catalogued
// name, once, to types of this package, and a method that has both wire
// directions' types is never described twice.
func TestEveryDescriptorNamesACataloguedMethod(t *testing.T) {
	ds := Descriptors()
	if len(ds) < 20 {
		t.Fatalf("only %d descriptors", len(ds))
	}
	seen := map[string]bool{}
	for _, d := range ds {
		def, ok := Lookup(d.Name)
		switch {
		case !ok:
			t.Errorf("descriptor %q names no catalogued method", d.Name)
		case def.Direction == Both:
			t.Errorf("descriptor %q describes a notification, which has no result", d.Name)
		}
		if seen[d.Name] {
			t.Errorf("%s is described twice", d.Name)
		}
		seen[d.Name] = true
		for _, typ := range []reflect.Type{d.Params, d.Result} {
			// struct{} (no fields) has no package.
			if typ.Kind() != reflect.Struct || (typ.PkgPath() != "" && typ.PkgPath() != reflect.TypeFor[Event]().PkgPath()) {
				t.Errorf("%s: %s is not a struct of package protocol", d.Name, typ)
			}
		}
	}
	// Negative control: a method with no wire types yet is not described.
	if seen[MethodStateWork] {
		t.Errorf("%s has no wire types, yet a descriptor names it", MethodStateWork)
	}
}

// TestDescriptorDirections pins which side serves each described method:
// what the extension's SDK serves is host-to-extension, what a host serves
// extension-to-host.
func TestDescriptorDirections(t *testing.T) {
	cases := []struct {
		d    Descriptor
		want Direction
	}{
		{Initialize.Descriptor(), HostToExtension},
		{OperationCall.Descriptor(), HostToExtension},
		{Validate.Descriptor(), HostToExtension},
		{KVCommit.Descriptor(), ExtensionToHost},
		{StateEvents.Descriptor(), ExtensionToHost},
		{ArtifactAbort.Descriptor(), ExtensionToHost},
	}
	for _, tc := range cases {
		if def, _ := Lookup(tc.d.Name); def.Direction != tc.want {
			t.Errorf("%s: direction %s, want %s", tc.d.Name, def.Direction, tc.want)
		}
	}
	if d := KVGet.Descriptor(); d.Params != reflect.TypeFor[KVGetParams]() || d.Result != reflect.TypeFor[KVGetResult]() {
		t.Errorf("kv.get is described with %s and %s", d.Params, d.Result)
	}
}

// TestEveryCataloguedMethodHasAConstant reads methods.go: every catalogued
// name has exactly one Method* constant, and every constant is catalogued.
func TestEveryCataloguedMethodHasAConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "methods.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || !strings.HasPrefix(vs.Names[0].Name, "Method") {
			return true
		}
		v, _ := strconv.Unquote(lit.Value)
		if prev, dup := consts[v]; dup {
			t.Errorf("%q has two constants: %s and %s", v, prev, vs.Names[0].Name)
		}
		consts[v] = vs.Names[0].Name
		return true
	})
	for _, m := range Catalogue() {
		if _, ok := consts[m.Name]; !ok {
			t.Errorf("%s has no Method constant in methods.go", m.Name)
		}
		delete(consts, m.Name)
	}
	for v, name := range consts {
		t.Errorf("%s = %q is not a catalogued method", name, v)
	}
}

// TestDescriptorsListsEveryDesc reads the package's source: every
// package-level Desc value is in Descriptors, so one added without being
// listed there fails here.
func TestDescriptorsListsEveryDesc(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]string{} // constant name → method name
	var described []string         // the constant each Desc names
	for _, f := range pkgs["protocol"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if len(n.Values) == 1 && strings.HasPrefix(n.Names[0].Name, "Method") {
					if lit, ok := n.Values[0].(*ast.BasicLit); ok {
						methods[n.Names[0].Name], _ = strconv.Unquote(lit.Value)
					}
				}
			case *ast.CompositeLit:
				if ix, ok := n.Type.(*ast.IndexListExpr); ok {
					if id, ok := ix.X.(*ast.Ident); ok && id.Name == "Desc" && len(n.Elts) == 1 {
						if kv, ok := n.Elts[0].(*ast.KeyValueExpr); ok {
							described = append(described, kv.Value.(*ast.Ident).Name)
						}
					}
				}
			}
			return true
		})
	}
	listed := map[string]bool{}
	for _, d := range Descriptors() {
		listed[d.Name] = true
	}
	// The negative control: the source holds descriptors at all.
	if len(described) < 20 {
		t.Fatalf("found only %d Desc values in the source", len(described))
	}
	for _, c := range described {
		if !listed[methods[c]] {
			t.Errorf("the Desc for %s (%q) is not in Descriptors", c, methods[c])
		}
	}
	if len(described) != len(Descriptors()) {
		t.Errorf("%d Desc values in the source, %d in Descriptors", len(described), len(Descriptors()))
	}
}
