package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/host/config"
)

func configInitCommand() *command {
	var force bool
	return &command{
		name:  "init",
		short: "write a starter config file",
		long: "Write a starter config file for the packages discovery finds (installed beside\n" +
			"it, bundled, served by this binary): a scope \"main\" with an entry of each of\n" +
			"their types, a connection of each connection type (secrets as env: references\n" +
			"to fill in), a binding and a manual route. The file is the operator's alone\n" +
			"(0600, its directory 0700). An existing file is kept unless --force. Prints\n" +
			"where it wrote and what to run next.",
		config: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &force, "force", "", "overwrite an existing config file")
		},
		run: func(r *runner, _ []string) error {
			cfg := config.Starter(manifestsOf(discoverAt(r.place)))
			data, err := cfg.Marshal()
			if err != nil {
				return err
			}
			file := r.place.ConfigFile
			err = config.WriteFile(file, data, force)
			if errors.Is(err, config.ErrFileExists) {
				return fmt.Errorf("%s already exists and was left as it is; pass --force to overwrite it", file)
			}
			if err != nil {
				return err
			}
			named := ""
			if r.place.Named {
				named = " --config " + shellQuote(file)
			}
			fmt.Fprintf(r.stdout, "wrote %s\nnext: open-conduit serve%s (with a daemon already running: open-conduit config apply%s)\n", file, named, named)
			return nil
		},
	}
}
