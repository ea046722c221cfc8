package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/internal/devloop"
)

func extensionDevCommand() *command {
	var entries, secrets []string
	return &command{
		name:  "dev",
		usage: "[DIR]",
		short: "run a package you are writing against a throwaway daemon, rebuilt on every change",
		long: "Run the package in DIR (default .) against a throwaway daemon while you work on it.\n" +
			"A DIR with open-conduit-extension.json is the package as it is (any language);\n" +
			"a DIR with go.mod is built with 'go build', its manifest read from the binary\n" +
			"(package-manifest), and laid out as a package. The build runs with\n" +
			"CGO_ENABLED=0 (a static binary: no dynamic loader at each start) unless your\n" +
			"environment sets CGO_ENABLED; a package that needs cgo sets CGO_ENABLED=1.\n\n" +
			"dev installs it into a new temporary directory, writes a config with one scope,\n" +
			"\"dev\", holding an entry of each type the package declares (config from --entry,\n" +
			"else {}), and refuses to start, printing each problem and the config, when\n" +
			"'config check' would. It then runs 'open-conduit serve' on that config with its\n" +
			"state in the temporary directory (never your own config or state), and prints\n" +
			"where things are and the commands that call each operation and follow the log.\n\n" +
			"It watches DIR (leaving out hidden directories, dist, bin and node_modules) and,\n" +
			"300 ms after the last change, rebuilds: a good build is swapped in and the\n" +
			"package restarted on the same state, so its KV and Events stay; a failed build\n" +
			"is printed and the running package left as it was. A rebuild that changes the\n" +
			"package's entry types applies the regenerated config. Ctrl-C or SIGTERM stops the\n" +
			"daemon, kills whatever it started that is still running, and removes the\n" +
			"temporary directory.",
		maxArgs: 1,
		flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&entries, "entry", nil, "TYPE=JSON: the config of the generated entry of TYPE (repeat for each type; {} when not given)")
			fs.StringArrayVar(&secrets, "secret", nil, "NAME=env:VAR: a secret of the scope, read from dev's variable VAR, selected by every entry; NAME=VALUE writes VALUE to an owner-only file the config references (repeat for each)")
		},
		run: func(r *runner, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if _, err := devloop.KindOf(dir); err != nil {
				return usagef("%v", err)
			}
			es, err := devloop.ParseEntries(entries)
			if err != nil {
				return usagef("%v", err)
			}
			ss, err := devloop.ParseSecrets(secrets)
			if err != nil {
				return usagef("%v", err)
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the open-conduit executable to run the daemon: %w", err)
			}
			err = devloop.Run(r.ctx, devloop.Options{
				Dir: dir, Entries: es, Secrets: ss, Self: self, Out: r.stdout,
				Installer: packages.Installer{Bundled: bundledDir(), Served: served()},
				Check: func(ctx context.Context, data []byte, file string) client.Validation {
					return checkOffline(ctx, data, file, discoverAt(place{ConfigFile: file, Named: true}))
				},
			})
			if err != nil && strings.Contains(err.Error(), "\n") {
				// Printed whole: the compiler's output, the generated config
				// and a log's end are many lines, which the one-line error
				// a failed command prints would join.
				fmt.Fprintln(r.stderr, err)
				return errors.New("not started")
			}
			return err
		},
	}
}
