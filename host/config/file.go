package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrFileExists is WriteFile's refusal to replace a file it was told to
// keep.
var ErrFileExists = errors.New("config: the file exists")

// WriteFile writes a config file atomically and owner-only: a temporary
// file in the same directory (0600), synced, then moved into place and the
// directory synced, so a reader or a crash never sees half a file. A
// directory it creates is 0700. With replace false an existing file is
// kept and the answer wraps ErrFileExists (the temporary file is linked, a
// step that fails rather than replaces).
func WriteFile(path string, text []byte, replace bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the config directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(text)
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp, path)
	} else if err = os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrFileExists)
	}
	if err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
