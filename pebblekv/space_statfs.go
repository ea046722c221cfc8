//go:build linux || darwin || freebsd

package pebblekv

import "syscall"

// spaceDir is the store's directory held open, so that each Update's
// free-space check is one fstatfs of it rather than a statfs that walks
// the directory's path again: about 1 µs against 3-4 on a commit path whose
// non-sync work is a few µs more.
type spaceDir struct{ fd int }

// openSpaceDir opens dir for the free-space checks. A directory that cannot
// be opened leaves the checks to statfs by path.
func openSpaceDir(dir string) spaceDir {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return spaceDir{fd: -1}
	}
	return spaceDir{fd: fd}
}

// free is the space an unprivileged writer may still use on the filesystem
// holding dir.
func (s spaceDir) free(dir string) (int64, error) {
	var st syscall.Statfs_t
	var err error
	if s.fd >= 0 {
		err = syscall.Fstatfs(s.fd, &st)
	} else {
		err = syscall.Statfs(dir, &st)
	}
	if err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// close lets the directory go; the checks fall back to statfs by path.
func (s *spaceDir) close() {
	if s.fd >= 0 {
		_ = syscall.Close(s.fd)
		s.fd = -1
	}
}
