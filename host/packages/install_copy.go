package packages

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// copyPackage copies the package directory src to dst, which must not
// exist. Symbolic links are resolved (an installed package is
// self-contained), directories are made 0700 and files keep their exec
// bits but lose group and other write. A special file (a device, a fifo, a
// socket) or a broken link fails the copy, as do the limits, which also
// stop a link loop.
func copyPackage(src, dst string, l Limits) error {
	c := &treeCopy{limits: l}
	return c.dir(src, dst)
}

// treeCopy counts what a copy wrote against its limits.
type treeCopy struct {
	limits  Limits
	bytes   int64
	entries int
}

func (c *treeCopy) count(path string, size int64) error {
	c.entries++
	c.bytes += size
	switch {
	case c.entries > c.limits.Entries:
		return fmt.Errorf("the package has more than %d files and directories (at %s): is a symbolic link looping?", c.limits.Entries, path)
	case c.bytes > c.limits.Bytes:
		return fmt.Errorf("the package is larger than %d bytes (at %s)", c.limits.Bytes, path)
	}
	return nil
}

func (c *treeCopy) dir(src, dst string) error {
	if err := c.count(src, 0); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	for _, e := range entries {
		if err := c.entry(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// entry copies one file or directory, following a symbolic link to what
// it names.
func (c *treeCopy) entry(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("%s: %w (a symbolic link must name a file in reach)", src, err)
	}
	switch {
	case st.IsDir():
		return c.dir(src, dst)
	case st.Mode().IsRegular():
		if err := c.count(src, st.Size()); err != nil {
			return err
		}
		return copyFile(src, dst, fileMode(st.Mode()))
	}
	return fmt.Errorf("%s is a special file (%s): a package holds only regular files and directories", src, st.Mode().Type())
}

// fileMode is what an installed file gets: owner read and write, its exec
// bits, read for group and others when it had it, never their write.
func fileMode(m fs.FileMode) fs.FileMode {
	return (m.Perm() | 0o600) &^ 0o022
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}

// fileOwner is the user owning a file.
func fileOwner(st fs.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}
