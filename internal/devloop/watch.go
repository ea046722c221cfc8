package devloop

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Debounce is how long the source must stay quiet after a change before
// dev rebuilds, so an editor's save (write, rename, chmod) or a checkout
// of many files is one rebuild.
const Debounce = 300 * time.Millisecond

// skipped reports whether a directory is left out of the watch: hidden
// directories (version control, editors), dist, bin and node_modules
// (build outputs and dependencies, which change without the source
// changing).
func skipped(name string) bool {
	switch name {
	case "dist", "bin", "node_modules":
		return true
	}
	return strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// watcher watches a directory tree, adding new subdirectories as they
// appear, and sends one signal per burst of changes.
type watcher struct {
	root string
	w    *fsnotify.Watcher
}

func newWatcher(root string) (*watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	x := &watcher{root: root, w: w}
	if err := x.addTree(root); err != nil {
		w.Close()
		return nil, err
	}
	return x, nil
}

// addTree watches dir and every directory under it that is not skipped.
func (x *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// A directory gone between the event and the walk is no change
			// to watch.
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if path != x.root && skipped(d.Name()) {
			return filepath.SkipDir
		}
		return x.w.Add(path)
	})
}

// ignored reports whether a change at path is inside a skipped directory
// or is a hidden file (an editor's swap or backup file).
func (x *watcher) ignored(path string) bool {
	rel, err := filepath.Rel(x.root, path)
	if err != nil {
		return true
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if skipped(part) {
			return true
		}
	}
	return strings.HasSuffix(path, "~")
}

// run sends on changes once the tree has been quiet for Debounce after a
// change, until ctx ends; a watch error is sent on errs.
func (x *watcher) run(ctx context.Context, changes chan<- struct{}, errs chan<- error) {
	defer x.w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-x.w.Events:
			if !ok {
				return
			}
			if x.ignored(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				_ = x.addTree(ev.Name)
			}
			timer.Reset(Debounce)
		case err, ok := <-x.w.Errors:
			if !ok {
				return
			}
			select {
			case errs <- err:
			default:
			}
		case <-timer.C:
			select {
			case changes <- struct{}{}:
			default:
			}
		}
	}
}
