package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// StateEnv names the environment variable that picks the state directory
// when no --state flag does.
const StateEnv = "OPEN_CONDUIT_STATE"

// ConfigFileName is the config file's name in the config directory.
const ConfigFileName = "config.json"

// StateDir resolves the daemon's state directory: flag when set, else
// $OPEN_CONDUIT_STATE, else $XDG_STATE_HOME/open-conduit, else
// ~/.local/state/open-conduit. The answer is absolute, so a daemon and its
// packages never depend on the directory a command was started in.
func StateDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv(StateEnv)
	}
	if dir == "" {
		base, err := xdgDir("XDG_STATE_HOME", ".local", "state")
		if err != nil {
			return "", err
		}
		dir = filepath.Join(base, "open-conduit")
	}
	return absolute(dir, "state directory")
}

// ConfigFile resolves the operator's config file: flag when set, else
// $XDG_CONFIG_HOME/open-conduit/config.json, else
// ~/.config/open-conduit/config.json. named reports whether the flag chose
// it: only the default location may be missing (the daemon then runs its
// embedded default); a named file that is missing is an error. The answer
// is absolute.
func ConfigFile(flag string) (path string, named bool, err error) {
	if flag != "" {
		path, err = absolute(flag, "config file")
		return path, true, err
	}
	base, err := xdgDir("XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", false, err
	}
	return filepath.Join(base, "open-conduit", ConfigFileName), false, nil
}

// SocketPath is the management API's socket in a state directory.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// xdgDir is $env, or the home directory joined with fallback.
func xdgDir(env string, fallback ...string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("no home directory to put the default in (set $%s or pass the flag): %w", env, errors.Join(err, os.ErrNotExist))
	}
	return filepath.Join(append([]string{home}, fallback...)...), nil
}

func absolute(path, what string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving the %s %q: %w", what, path, err)
	}
	return abs, nil
}

// checkSocket refuses a socket path that is not a socket, or is owned by
// another user than this process's own or root. A path where nothing is
// passes: dialing it then says no daemon answers.
func checkSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: checking %s: %v", ErrUntrustedSocket, path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s is %s, not a socket, so no daemon made it; nothing was sent. Remove it if it is yours, or pass a --state only you can write to",
			ErrUntrustedSocket, path, kindOf(fi.Mode()))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if me := os.Getuid(); int(st.Uid) != me && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by user %d, not by you (user %d) or root, so another user may be answering in the daemon's place; nothing was sent. Use a state directory only you can write to (pass another --state), and have this one removed",
			ErrUntrustedSocket, path, st.Uid, me)
	}
	return nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a plain file"
	}
	return "not a file the daemon makes"
}
