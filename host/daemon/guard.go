package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/open-conduit/open-conduit/host/api"
)

// Who may touch the daemon's files.
//
// The state directory holds the store, the logs and the API socket, and the
// config directory the config and the installed packages the daemon runs:
// whoever can change either can read every record, answer the operator in
// the daemon's place, or run code as the daemon's user. So the daemon runs
// only on directories no other user can change: each must be owned by the
// daemon's user (a config directory may be root's) and writable by no one
// else, and every directory on the way
// to it owned by that user or root and writable by no one else unless its
// sticky bit keeps others from renaming what they do not own (as /tmp's
// does). Once that holds nobody else can plant anything inside, so what
// the daemon finds there is its own or its operator's; a symbolic link
// where the store, a log or the socket goes is refused all the same, since
// the daemon never follows one out of its state directory.
//
// What the daemon creates is owner-only: it sets the process umask to 077
// before it creates anything. A umask, rather than a chmod after each
// create, also covers the files the store creates through the OS, and
// makes the socket owner-only from the moment it exists, with no window
// between listen and chmod in which another user could connect. The
// packages' processes inherit the umask, so what they create is private
// to the operator too.

// ownerOnlyUmask is the umask serve runs under.
const ownerOnlyUmask = 0o077

// guardConfig refuses a config directory, config file or installed
// packages' directory another user could change. A config directory that
// does not exist yet is created owner-only by the first config apply.
func (d *Daemon) guardConfig() error {
	uid := os.Getuid()
	dir := d.dirs.Config
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := trustedDir("config directory", dir, uid); err != nil {
		return err
	}
	for _, p := range []string{d.opts.ConfigFile, d.dirs.Installed()} {
		if err := trustedEntry(p, uid); err != nil {
			return err
		}
	}
	return nil
}

// prepareState makes the state directory the daemon's alone before it
// opens anything there: the umask, the directory (created 0700, with any
// parent it creates), its ownership and mode, and no symbolic link or
// other user's file where the store, the logs or the socket go. What the
// daemon created before it ran owner-only is made owner-only.
func (d *Daemon) prepareState() error {
	syscall.Umask(ownerOnlyUmask)
	uid := os.Getuid()
	state := d.opts.StateDir
	// The way there is checked before anything is created on it.
	if err := trustedDir("state directory", state, uid); err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return fmt.Errorf("creating the state directory %s: %w", state, err)
	}
	if err := trustedDir("state directory", state, uid); err != nil {
		return err
	}
	return checkStateEntries(state, uid)
}

// trustedDir refuses dir when another user could replace it or change
// what is in it; what is refused says which path and what to change. A dir
// that does not exist yet is judged by the directories on its way.
func trustedDir(what, dir string, uid int) error {
	// Symbolic links on the way as written: one another user owns could
	// be pointed elsewhere at any time.
	for _, p := range pathPrefixes(dir) {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Judged below, on the part that exists.
			break
		}
		if err != nil {
			return fmt.Errorf("checking the %s %s: %w", what, dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 && !ownedByUs(fi, uid) {
			return fmt.Errorf("%s, on the way to the %s %s, is a symbolic link owned by user %d: another user can point it anywhere. Use a path without it (pass another --%s)",
				p, what, dir, owner(fi), flagFor(what))
		}
	}
	// The directories themselves, where the links lead.
	real, rest := resolveExisting(dir)
	for _, p := range pathPrefixes(real) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("checking the %s %s: %w", what, dir, err)
		}
		final := p == real && rest == ""
		if err := judgeDir(what, dir, p, fi, uid, final); err != nil {
			return err
		}
	}
	return nil
}

// judgeDir judges one directory on the way to (or, final, being) the
// directory the daemon uses. The state directory must be the daemon's
// user's own; a config directory may be root's, which no one else can
// change either.
func judgeDir(what, dir, p string, fi fs.FileInfo, uid int, final bool) error {
	flag := flagFor(what)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s, on the way to the %s %s, is not a directory; pass another --%s", p, what, dir, flag)
	case final && owner(fi) != uid && (flag == "state" || owner(fi) != 0):
		return fmt.Errorf("the %s %s is owned by user %d, not by you (user %d): another user may have created it to read or replace what the daemon keeps there. Pass a --%s you own (the default is under your home directory), or have it removed",
			what, dir, owner(fi), uid, flag)
	case final && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("the %s %s can be written by its group or others (mode %04o), who could plant a socket or a symbolic link in it. Run 'chmod go-w %s', or pass another --%s",
			what, dir, fi.Mode().Perm(), dir, flag)
	case !ownedByUs(fi, uid):
		return fmt.Errorf("%s, on the way to the %s %s, is owned by user %d, who could replace the directory. Pass a --%s under directories only you or root own",
			p, what, dir, owner(fi), flag)
	case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("%s, on the way to the %s %s, can be written by its group or others (mode %04o), who could replace the directory. Run 'chmod go-w %s', or pass a --%s elsewhere",
			p, what, dir, fi.Mode().Perm(), p, flag)
	}
	return nil
}

// trustedEntry refuses a file or directory at path (when there is one)
// that another user owns or may write.
func trustedEntry(path string, uid int) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if !ownedByUs(fi, uid) {
		return fmt.Errorf("%s is owned by user %d, not by you (user %d) or root: the daemon would run what another user wrote. Remove it, or have it replaced by one you own", path, owner(fi), uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s can be written by its group or others (mode %04o), so anyone of them could change what the daemon runs. Run 'chmod go-w %s'", path, fi.Mode().Perm(), path)
	}
	return nil
}

// checkStateEntries refuses a symbolic link, or another user's file, at
// the top of the state directory and anywhere in the store and the logs,
// and under extensions/ where a package's directory goes (what a package
// keeps in its own directory is its own), and makes what it accepts
// owner-only.
func checkStateEntries(state string, uid int) error {
	entries, err := os.ReadDir(state)
	if err != nil {
		return fmt.Errorf("reading the state directory %s: %w", state, err)
	}
	for _, e := range entries {
		p := filepath.Join(state, e.Name())
		deep := e.Name() == "store" || e.Name() == "logs"
		if err := checkStateEntry(p, uid); err != nil {
			return err
		}
		switch {
		case deep && e.IsDir():
			err = filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
				if err != nil || path == p {
					return err
				}
				return checkStateEntry(path, uid)
			})
		case e.Name() == "extensions" && e.IsDir():
			err = checkChildren(p, uid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkChildren(dir string, uid int) error {
	children, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, c := range children {
		if err := checkStateEntry(filepath.Join(dir, c.Name()), uid); err != nil {
			return err
		}
	}
	return nil
}

// checkStateEntry refuses a symbolic link or another user's file in the
// state directory, and takes group and other permissions off one that is
// the daemon's (a store or log written before the daemon ran owner-only).
func checkStateEntry(path string, uid int) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link (to %s), and the daemon never follows a link out of its state directory: remove it (the daemon creates what it needs there), or pass another --state", path, target)
	}
	if owner(fi) != uid {
		return fmt.Errorf("%s, in the state directory, is owned by user %d, not by you (user %d): the daemon does not use what another user put there. Remove it, or pass another --state", path, owner(fi), uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && (fi.IsDir() || fi.Mode().IsRegular()) {
		if err := os.Chmod(path, perm&^0o077); err != nil {
			return fmt.Errorf("making %s owner-only: %w", path, err)
		}
	}
	return nil
}

// resolveExisting resolves the symbolic links of the longest part of path
// that exists, and returns it with the rest, which does not exist yet.
func resolveExisting(path string) (real, rest string) {
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			rel, _ := filepath.Rel(p, path)
			if rel == "." {
				rel = ""
			}
			return r, rel
		}
		if p == filepath.Dir(p) {
			return p, ""
		}
	}
}

// pathPrefixes are /, then each longer prefix of the absolute path p, up
// to p itself.
func pathPrefixes(p string) []string {
	p = filepath.Clean(p)
	var out []string
	for ; ; p = filepath.Dir(p) {
		out = append(out, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// ownedByUs reports whether fi is uid's or root's: root can change
// anything anyway, so a root-owned directory gives nobody else a way in.
func ownedByUs(fi fs.FileInfo, uid int) bool {
	o := owner(fi)
	return o == uid || o == 0
}

func flagFor(what string) string {
	if what == "config directory" {
		return "config"
	}
	return "state"
}

// apiConnections is how many management API connections the daemon keeps
// open at once: api.DefaultMaxConns, or a quarter of the descriptors the
// daemon may open when that is fewer, so whatever clients do the rest stay
// for the store and the packages' pipes and logs. The soft limit is raised
// to the hard one first (the Go runtime normally has at start; then this
// changes nothing, and the packages still start with the original soft
// limit).
func apiConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return api.DefaultMaxConns
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return int(min(uint64(api.DefaultMaxConns), max(lim.Cur/4, 4)))
}
