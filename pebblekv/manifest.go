package pebblekv

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/record"
)

// ManifestMark is how far the store's MANIFEST reaches: its file and size.
// Pebble only appends to a MANIFEST, or starts a new one with a higher
// number, so a later mark is never smaller; a store whose MANIFEST falls
// short of a mark recorded earlier lost edits Pebble had synced.
type ManifestMark struct {
	// Name is the MANIFEST's file name (MANIFEST-000001), "" when unknown.
	Name string
	// Size is its size in bytes.
	Size int64
}

// Number is the MANIFEST's file number, 0 when Name has none.
func (m ManifestMark) Number() uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(m.Name, "MANIFEST-"), 10, 64)
	return n
}

// Less reports whether m reaches less far than o.
func (m ManifestMark) Less(o ManifestMark) bool {
	if m.Number() != o.Number() {
		return m.Number() < o.Number()
	}
	return m.Size < o.Size
}

// Manifest is how far the store's MANIFEST reaches now.
func (db *DB) Manifest() ManifestMark {
	db.manifest.mu.Lock()
	defer db.manifest.mu.Unlock()
	return db.manifest.markLocked()
}

// manifestWatch follows the MANIFEST Pebble writes, for ManifestSynced.
type manifestWatch struct {
	notify func(ManifestMark)

	mu   sync.Mutex
	path string
	last ManifestMark
}

func (w *manifestWatch) opened(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.path = path
	w.last = w.markLocked()
}

// synced reports the MANIFEST's reach after Pebble synced an edit to it,
// or created it at path.
func (w *manifestWatch) synced(path string) {
	w.mu.Lock()
	if path != "" {
		w.path = path
	}
	m := w.markLocked()
	if w.path == "" || !w.last.Less(m) {
		w.mu.Unlock()
		return
	}
	w.last = m
	notify := w.notify
	w.mu.Unlock()
	if notify != nil {
		notify(m)
	}
}

func (w *manifestWatch) markLocked() ManifestMark {
	if w.path == "" {
		return ManifestMark{}
	}
	m := ManifestMark{Name: filepath.Base(w.path)}
	if fi, err := os.Stat(w.path); err == nil {
		m.Size = fi.Size()
	}
	return m
}

// manifestValid is how many bytes from the start of the MANIFEST at path
// read as whole, valid records. Pebble stops reading a MANIFEST at the
// first record it cannot read and says nothing, so a damaged record is
// found by reading it again here.
func manifestValid(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rr := record.NewReader(f, 0)
	valid := int64(0)
	for {
		r, err := rr.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err != nil {
			// io.EOF at the end; anything else is where the damage is.
			return valid, nil
		}
		valid = rr.Offset()
	}
}
