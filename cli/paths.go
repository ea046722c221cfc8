package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/protocol"
)

// where holds the --state and --config flags as typed. resolve turns them
// into a place once, before a command uses either.
type where struct {
	state, config       string
	hasState, hasConfig bool
}

func (w *where) stateFlag(fs *pflag.FlagSet) {
	w.hasState = true
	fs.StringVar(&w.state, "state", "", "the daemon's state directory (default $"+client.StateEnv+
		", else $XDG_STATE_HOME/open-conduit, else ~/.local/state/open-conduit)")
}

func (w *where) configFlag(fs *pflag.FlagSet) {
	w.hasConfig = true
	fs.StringVar(&w.config, "config", "", "the config file (default $XDG_CONFIG_HOME/open-conduit/"+client.ConfigFileName+
		", else ~/.config/open-conduit/"+client.ConfigFileName+"); installed packages are in extensions/ beside it")
}

// place is where a command works. Every path is absolute, so nothing
// depends on the directory the command was started in once it is resolved.
type place struct {
	// State is the daemon's state directory.
	State string
	// ConfigFile is the config file; Named says --config chose it (only the
	// default location may be missing).
	ConfigFile string
	Named      bool
}

// resolve applies the client package's rules to the flags the command
// takes: a relative path is made absolute against the working directory.
func (w *where) resolve() (place, error) {
	var p place
	var err error
	if w.hasState {
		if p.State, err = client.StateDir(w.state); err != nil {
			return place{}, err
		}
	}
	if w.hasConfig {
		if p.ConfigFile, p.Named, err = client.ConfigFile(w.config); err != nil {
			return place{}, err
		}
	}
	return p, nil
}

// installed is the directory of installed packages: extensions/ beside
// the config file.
func (p place) installed() string { return filepath.Join(filepath.Dir(p.ConfigFile), "extensions") }

// served are the manifests of the first-party packages this binary serves.
func served() map[string]*protocol.Manifest {
	out := map[string]*protocol.Manifest{}
	for name, build := range extensions.Served {
		out[name] = build().Manifest
	}
	return out
}

// bundledDir is extensions/ beside the real executable.
func bundledDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), "extensions")
}
