package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/host/config"
)

func configInitCommand() *command {
	var force bool
	return &command{
		name:  "init",
		short: "write a starter config file",
		long: "Write a starter config file for the packages discovery finds (installed beside\n" +
			"it, bundled, served by this binary): a demo scope with an entry of each of\n" +
			"their types. The file is the operator's alone (0600, its directory 0700). An\n" +
			"existing file is kept unless --force. Prints where it wrote and what to run next.",
		config: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &force, "force", "", "overwrite an existing config file")
		},
		run: func(r *runner, _ []string) error {
			cfg := config.Default(manifestsOf(discoverAt(r.place)))
			data, err := cfg.Marshal()
			if err != nil {
				return err
			}
			file := r.place.ConfigFile
			if err := writeConfigFile(file, data, force); err != nil {
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

// writeConfigFile writes a config only its owner reads, creating its
// directory owner-only. Without force an existing file is an error; with
// it the file is replaced whole (a new file renamed over it), so a reader
// never sees half of one and the old file's mode does not carry over.
func writeConfigFile(path string, data []byte, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the config directory: %w", err)
	}
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists and was left as it is; pass --force to overwrite it", path)
		}
		if err != nil {
			return err
		}
		if err := closeAfter(f, data); err != nil {
			os.Remove(path)
			return err
		}
		return nil
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	if err := closeAfter(f, data); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// closeAfter writes data to f, syncs and closes it.
func closeAfter(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
