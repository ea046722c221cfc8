package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/internal/scaffold"
)

func extensionNewCommand() *command {
	var o scaffold.Options
	return &command{
		name:  "new",
		usage: "NAME",
		short: "write a new package repository whose make check passes",
		long: "Write a Go package repository for a new package NAME into --dir (default ./NAME):\n" +
			"go.mod requiring this build's Open Conduit with a tool directive (so\n" +
			"'go tool open-conduit' needs nothing installed), main.go with one operation,\n" +
			"NAME.hello, a unit test on sdktest, certification.json, a Makefile (check,\n" +
			"package, install) and a README saying what to change first; then run\n" +
			"'go mod tidy' there. --replace DIR builds against an Open Conduit checkout\n" +
			"instead, from its requirements and go.sum; a development build that cannot\n" +
			"name its own version needs it. Refuses a NAME the manifest rules or Open\n" +
			"Conduit's own names rule out, and a --dir that exists and is not empty.",
		minArgs: 1, maxArgs: 1,
		json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.Dir, "dir", "", "the directory to write (default ./NAME); it must not exist or be empty")
			fs.StringVar(&o.Module, "module", "", "the new repository's module path (default example.com/NAME)")
			fs.StringVar(&o.Replace, "replace", "", "an Open Conduit checkout to build against with a replace directive")
		},
		run: func(r *runner, args []string) error {
			o.Name, o.Served = args[0], extensions.Names()
			info, _ := debug.ReadBuildInfo()
			v, verr := scaffold.RequireVersion(info, Version)
			o.Version = v
			if err := scaffold.Validate(&o); err != nil {
				if errors.Is(err, scaffold.ErrUnknownVersion) && verr != nil {
					err = verr
				}
				return usagef("%v", err)
			}
			res, err := scaffold.Create(r.ctx, o)
			if err != nil {
				return err
			}
			return r.emit(res, func(w io.Writer) error { return writeNew(w, res) })
		},
	}
}

// writeNew says what extension new wrote and what to run next.
func writeNew(w io.Writer, res *scaffold.Result) error {
	fmt.Fprintf(w, "wrote %s: module %s, requiring %s %s\n", res.Dir, res.Module, scaffold.ModulePath, res.Requires)
	if res.Replace != "" {
		fmt.Fprintf(w, "  replaced by the checkout %s\n", res.Replace)
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(res.Files, " "))
	if res.TidyProblem != "" {
		fmt.Fprintf(w, "go mod tidy could not finish, so go.mod and go.sum start from the checkout's: %s\n", res.TidyProblem)
	}
	dir := res.Dir
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = rel
		}
	}
	return writeLines(w, "next:",
		"  cd "+shellQuote(dir),
		"  make check     # gofmt, vet, test -race, build, package, extension check",
		"  make install   # install dist/"+res.Name+" beside the config",
		"the README says what to change first")
}
