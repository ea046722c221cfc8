package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// other is a user id that is neither the test's nor root's.
const other = 65534

// giveAway hands path to another user, or skips: only root can.
func giveAway(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, other, other); err != nil {
		t.Skipf("giving %s to another user needs root (chown): %v", path, err)
	}
}

// TestStateDirectoryAnotherUserCouldChangeIsRefused: each directory on the
// way, and the state directory itself, is judged by who owns it and who
// may write it; a sticky directory such as /tmp is a safe place to create
// one's own.
func TestStateDirectoryAnotherUserCouldChangeIsRefused(t *testing.T) {
	uid := os.Getuid()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) string
		says  string
	}{
		{"owned by another user", func(t *testing.T, root string) string {
			dir := filepath.Join(root, "state")
			mustMkdir(t, dir, 0o700)
			giveAway(t, dir)
			return dir
		}, "is owned by user 65534"},
		{"writable by others", func(t *testing.T, root string) string {
			dir := filepath.Join(root, "state")
			mustMkdir(t, dir, 0o777)
			return dir
		}, "chmod go-w"},
		{"a parent writable by its group", func(t *testing.T, root string) string {
			parent := filepath.Join(root, "shared")
			mustMkdir(t, parent, 0o770)
			return filepath.Join(parent, "state")
		}, "on the way to the state directory"},
		{"a parent another user owns", func(t *testing.T, root string) string {
			parent := filepath.Join(root, "theirs")
			mustMkdir(t, parent, 0o755)
			giveAway(t, parent)
			return filepath.Join(parent, "state")
		}, "is owned by user 65534, who could replace the directory"},
		{"a symbolic link on the way another user owns", func(t *testing.T, root string) string {
			mine := filepath.Join(root, "mine")
			mustMkdir(t, mine, 0o700)
			link := filepath.Join(root, "link")
			if err := os.Symlink(mine, link); err != nil {
				t.Fatal(err)
			}
			giveAway(t, link)
			return filepath.Join(link, "state")
		}, "is a symbolic link owned by user 65534"},
		{"a file where the directory goes", func(t *testing.T, root string) string {
			f := filepath.Join(root, "file")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "state")
		}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			err := trustedDir("state directory", dir, uid)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("trustedDir(%s) = %v; want it refused, saying %q", dir, err, tc.says)
			}
		})
	}
	// Negative controls: one's own directory, one not made yet under
	// one's own, and one not made yet in a sticky shared directory.
	root := t.TempDir()
	sticky := filepath.Join(root, "tmp")
	mustMkdir(t, sticky, os.ModeSticky|0o777)
	for _, dir := range []string{root, filepath.Join(root, "a", "b"), filepath.Join(sticky, "state")} {
		if err := trustedDir("state directory", dir, uid); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestStateEntriesAreOwnerOnlyAndNeverLinks: a symbolic link where the
// store, a log or the socket goes is refused; what the daemon wrote before
// it ran owner-only is made owner-only, and a package's own directory is
// left as the package keeps it inside.
func TestStateEntriesAreOwnerOnlyAndNeverLinks(t *testing.T) {
	uid := os.Getuid()
	for _, at := range []string{"store", "logs/extensions", "logs/extensions/hello.log", "open-conduit.sock", "lock", "extensions/hello"} {
		t.Run(at, func(t *testing.T) {
			state := t.TempDir()
			mustMkdir(t, filepath.Join(state, filepath.Dir(at)), 0o700)
			if err := os.Symlink(t.TempDir(), filepath.Join(state, at)); err != nil {
				t.Fatal(err)
			}
			err := checkStateEntries(state, uid)
			if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), filepath.Join(state, at)) {
				t.Fatalf("a link at %s: %v", at, err)
			}
		})
	}
	state := t.TempDir()
	mustMkdir(t, filepath.Join(state, "store"), 0o755)
	mustMkdir(t, filepath.Join(state, "extensions", "hello", "work"), 0o755)
	store := filepath.Join(state, "store", "000001.log")
	if err := os.WriteFile(store, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(state, "extensions", "hello", "work", "root")); err != nil {
		t.Fatal(err)
	}
	if err := checkStateEntries(state, uid); err != nil {
		t.Fatalf("a state directory of the daemon's own: %v", err)
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(state, "store"): 0o700,
		store:                         0o600,
		filepath.Join(state, "extensions", "hello"):         0o700,
		filepath.Join(state, "extensions", "hello", "work"): 0o755,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode().Perm(), err, want)
		}
	}
}

func mustMkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
