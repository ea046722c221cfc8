// Package scaffold writes a new package repository, what `open-conduit
// extension new` makes: a Go module requiring Open Conduit (with a tool
// directive, so `go tool open-conduit` needs nothing installed), main.go
// with one operation in the declare-once form, a unit test on sdktest, a
// certification fixture, a Makefile whose check target passes on its first
// run, and a README saying what to change first. The files are templates
// embedded in the binary; the name rules are protocol's and discovery's, so
// a scaffold never makes a package the host would refuse.
package scaffold

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
)

//go:embed template
var templates embed.FS

// GoVersion is the go directive a new package's go.mod starts with: the
// Go release Open Conduit's own module needs.
const GoVersion = "1.26.7"

// Options say what to write. Validate fills the defaults.
type Options struct {
	// Name is the package's name, as its manifest says it.
	Name string
	// Dir is the repository's directory; it must not exist or be empty.
	// Default ./Name.
	Dir string
	// Module is the new repository's module path. Default example.com/Name.
	Module string
	// Replace is an Open Conduit checkout to build against with a replace
	// directive, its requirements and go.sum the starting point. Empty: none.
	Replace string
	// Version is the Open Conduit version to require (RequireVersion). It
	// may be empty only with Replace.
	Version string
	// Served are the packages the running binary serves itself; their
	// names are taken.
	Served []string
}

// Result is what Create wrote.
type Result struct {
	// Name is the package's name.
	Name string `json:"name"`
	// Dir is the repository's absolute directory.
	Dir string `json:"dir"`
	// Module is its module path.
	Module string `json:"module"`
	// Requires is the Open Conduit version its go.mod requires.
	Requires string `json:"requires"`
	// Replace is the checkout a replace directive points at, if any.
	Replace string `json:"replace,omitempty"`
	// Files are the files written, relative to Dir, sorted.
	Files []string `json:"files"`
	// TidyProblem is why go mod tidy failed with Replace; the checkout's
	// requirements and go.sum were kept, so the package may still build
	// from the module cache.
	TidyProblem string `json:"tidy_problem,omitempty"`
}

// CheckName refuses a name the manifest rules rule out, a name Open
// Conduit registers itself, and a package the binary serves, saying what
// to change.
func CheckName(name string, served []string) error {
	switch {
	case name == "":
		return errors.New("the package needs a NAME: a lower-case letter, then lower-case letters, digits, '-' or '_'")
	case discover.HostNames[name]:
		return fmt.Errorf("NAME %q is a name Open Conduit registers itself: choose another name", name)
	case slices.Contains(served, name):
		return fmt.Errorf("NAME %q is a package this open-conduit serves itself: choose another name", name)
	}
	problems := Manifest(name).Problems()
	if len(problems) == 0 {
		return nil
	}
	// A broken name breaks every name built on it; its own rule says it.
	if i := slices.IndexFunc(problems, func(p protocol.Problem) bool { return p.Path == "/name" }); i >= 0 {
		problems = problems[i : i+1]
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	return fmt.Errorf("NAME %q cannot name a package: %s", name, strings.Join(msgs, "; "))
}

// Manifest is the manifest the new package's main.go derives: the package,
// its entry type and its one operation, NAME.hello. CheckName runs the
// manifest rules on it, so a name is judged as the package will be.
func Manifest(name string) *protocol.Manifest {
	return &protocol.Manifest{
		Name:     name,
		Version:  "0.1.0",
		Protocol: append([]int(nil), protocol.Versions...),
		Command:  []string{name + "-extension"},
		Provides: protocol.Provides{
			Extensions: []protocol.ExtensionType{{Type: name}},
			Operations: []protocol.Operation{{Name: name + ".hello", Kind: protocol.OperationHandler}},
		},
	}
}

// Validate checks o and fills its defaults: the name, the module path, an
// absolute directory that is missing or empty, and a checkout for Replace.
// Its errors are the caller's input to change.
func Validate(o *Options) error {
	if err := CheckName(o.Name, o.Served); err != nil {
		return err
	}
	if o.Module == "" {
		o.Module = "example.com/" + o.Name
	}
	if err := checkModulePath(o.Module); err != nil {
		return err
	}
	if o.Dir == "" {
		o.Dir = o.Name
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	if err := checkDir(dir); err != nil {
		return err
	}
	if o.Replace != "" {
		if o.Replace, err = filepath.Abs(o.Replace); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(o.Replace, "go.mod")); err != nil {
			return fmt.Errorf("--replace %s is not an Open Conduit checkout (no go.mod there): name the directory holding its go.mod", o.Replace)
		}
	}
	if o.Version == "" && o.Replace == "" {
		return fmt.Errorf("%w: pass --replace DIR naming an Open Conduit checkout to build against", ErrUnknownVersion)
	}
	return nil
}

// checkDir accepts a directory that does not exist yet or is empty.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is a file, not a directory: choose another --dir", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty: choose another --dir, or empty it", dir)
	}
	return nil
}

// checkModulePath accepts slash-separated elements of the characters the
// go command allows in a module path, none empty or starting with a dot.
func checkModulePath(p string) error {
	for _, el := range strings.Split(p, "/") {
		ok := el != "" && el[0] != '.' && el[len(el)-1] != '.'
		for _, c := range el {
			ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c))
		}
		if !ok {
			return fmt.Errorf("--module %q is not a module path: use elements of letters, digits, '-', '.', '_' or '~' joined by '/', such as example.com/NAME", p)
		}
	}
	return nil
}

// Create writes the repository o (validated) describes and runs go mod
// tidy in it. When writing fails it removes what it wrote; when tidy fails
// the files stay: with Replace the failure is reported in the Result and
// go.mod and go.sum are the checkout's, else it is an error.
func Create(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: o.Name, Dir: o.Dir, Module: o.Module, Requires: o.Version, Replace: o.Replace}
	if res.Requires == "" {
		res.Requires = replacedVersion
	}
	files, err := render(o, res.Requires)
	if err != nil {
		return nil, err
	}
	if o.Replace != "" {
		if err := fromCheckout(ctx, o, res.Requires, files); err != nil {
			return nil, err
		}
	}
	if err := writeAll(o.Dir, files); err != nil {
		return nil, err
	}
	for name := range files {
		res.Files = append(res.Files, name)
	}
	slices.Sort(res.Files)
	if err := tidy(ctx, o.Dir); err != nil {
		if o.Replace == "" {
			return res, fmt.Errorf("wrote %s, but %w; run 'go mod tidy' there once the module proxy is reachable, or, when %s %s is not published (a build from your own checkout), remove the directory and run again with --replace naming that checkout", o.Dir, err, ModulePath, o.Version)
		}
		res.TidyProblem = err.Error()
		return res, writeAll(o.Dir, map[string][]byte{"go.mod": files["go.mod"], "go.sum": files["go.sum"]})
	}
	if !slices.Contains(res.Files, "go.sum") {
		res.Files = append(res.Files, "go.sum")
		slices.Sort(res.Files)
	}
	return res, nil
}

// render fills every template, and go.mod.
func render(o Options, version string) (map[string][]byte, error) {
	data := map[string]string{"Name": o.Name, "Module": o.Module}
	files := map[string][]byte{"go.mod": goMod(o.Module, GoVersion, version, nil, o.Replace)}
	err := fs.WalkDir(templates, "template", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		t, err := template.ParseFS(templates, path)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(path, "template/"), ".tmpl")
		name = strings.Replace(name, "dot-", ".", 1)
		out := b.Bytes()
		if strings.HasSuffix(name, ".go") {
			if out, err = format.Source(out); err != nil {
				return fmt.Errorf("scaffold template %s: %w", path, err)
			}
		}
		files[name] = out
		return nil
	})
	return files, err
}

// writeAll writes files under dir, creating it; on failure it removes
// what it wrote, and dir when it created it.
func writeAll(dir string, files map[string][]byte) (err error) {
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var written []string
	defer func() {
		if err == nil {
			return
		}
		for _, f := range written {
			_ = os.Remove(f)
		}
		if created {
			_ = os.RemoveAll(dir)
		}
	}()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		written = append(written, path)
	}
	return nil
}
