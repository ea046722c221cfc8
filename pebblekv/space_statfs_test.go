//go:build linux || darwin || freebsd

package pebblekv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpaceDirReadsTheDirectoryItHoldsNotThePath: the free-space check
// reads the filesystem through the directory it holds open, so it answers
// when the path no longer leads there, where a statfs of the path fails (and
// a failed check lets every write through); closed, it goes by the path.
func TestSpaceDirReadsTheDirectoryItHoldsNotThePath(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	held := openSpaceDir(dir)
	defer held.close()
	if held.fd < 0 {
		t.Fatal("the directory was not opened")
	}
	if err := os.Rename(dir, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	if free, err := held.free(dir); err != nil || free <= 0 {
		t.Errorf("through the held directory: %d, %v", free, err)
	}
	// Negative control: by the path, the same question fails.
	byPath := openSpaceDir(dir)
	if _, err := byPath.free(dir); err == nil {
		t.Error("a path that is gone answered")
	}
	held.close()
	if _, err := held.free(dir); err == nil {
		t.Error("closed, the check still read the directory it let go")
	}
}

// TestSpaceAfterCloseGoesByThePath: Close lets the store's directory go,
// and Space still answers for the path.
func TestSpaceAfterCloseGoesByThePath(t *testing.T) {
	db := openDB(t, nil)
	if _, _, err := db.Space(); err != nil {
		t.Skipf("statfs cannot read the free space here: %v", err)
	}
	if db.space.fd < 0 {
		t.Fatal("the open store does not hold its directory")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db.space.fd >= 0 {
		t.Error("Close kept the store's directory open")
	}
	if _, _, err := db.Space(); err != nil {
		t.Errorf("Space after Close: %v", err)
	}
}
