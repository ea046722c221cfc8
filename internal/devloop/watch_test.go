package devloop

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// waitFor is how long a watch test waits for a change to be signalled on a
// loaded machine.
const waitFor = 30 * time.Second

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWatchLeavesOutHiddenDistBinNodeModules(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "pkg/inner", ".git/objects", "dist", "bin", "node_modules/x", "pkg/.cache", "pkg/bin")
	x, err := newWatcher(root)
	if err != nil {
		t.Fatal(err)
	}
	defer x.w.Close()
	got := x.w.WatchList()
	for _, want := range []string{root, filepath.Join(root, "pkg"), filepath.Join(root, "pkg/inner")} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not watched; watched: %v", want, got)
		}
	}
	for _, dir := range []string{".git", ".git/objects", "dist", "bin", "node_modules", "node_modules/x", "pkg/.cache", "pkg/bin"} {
		if slices.Contains(got, filepath.Join(root, dir)) {
			t.Errorf("%s is watched, but is left out", dir)
		}
	}
	cases := []struct {
		path    string
		ignored bool
	}{
		{"main.go", false},
		{"pkg/inner/a.go", false},
		{".main.go.swp", true},
		{"main.go~", true},
		{"dist/app", true},
		{"bin/greeter-extension", true},
		{"node_modules/x/index.js", true},
		{"pkg/.cache/f", true},
	}
	for _, tc := range cases {
		if got := x.ignored(filepath.Join(root, tc.path)); got != tc.ignored {
			t.Errorf("ignored(%s) = %v, want %v", tc.path, got, tc.ignored)
		}
	}
}

func TestWatchSignalsChangesInNewSubdirectories(t *testing.T) {
	root := t.TempDir()
	x, err := newWatcher(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan struct{}, 1)
	errs := make(chan error, 1)
	go x.run(ctx, changes, errs)

	mkdirs(t, root, "sub")
	waitChange(t, changes, "a new directory")
	// The new directory is watched: a file written in it is a change.
	if err := os.WriteFile(filepath.Join(root, "sub", "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes, "a file in the new directory")
	if !slices.Contains(x.w.WatchList(), filepath.Join(root, "sub")) {
		t.Fatalf("the new directory is not watched: %v", x.w.WatchList())
	}
}

func waitChange(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
	case <-time.After(waitFor):
		t.Fatalf("no change signalled within %s for %s", waitFor, what)
	}
}
