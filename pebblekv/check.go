package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// CheckResult is what Check found.
type CheckResult struct {
	// Tables is how many sstables had the checksum of every block verified,
	// read from the file itself rather than the block cache.
	Tables int
	// Points is how many point keys Pebble's level check visited.
	Points int64
	// Damaged are the files found damaged; none when the store is sound.
	Damaged []Damage
}

// Check reads the whole store: the checksum of every block of every live
// sstable, from disk, then Pebble's consistency check of the levels (every
// key in order, each level's invariant). A damaged file is a finding,
// recorded in Health too, not an error; the error is a check that could not
// run (ctx done between two files, a closed or failed store). It costs a
// read of the whole store, so the daemon runs it only when asked.
func (db *DB) Check(ctx context.Context) (res CheckResult, err error) {
	db.life.RLock()
	defer db.life.RUnlock()
	if err := db.usable(); err != nil {
		return res, err
	}
	defer db.recoverFatal(&err)
	levels, err := db.pdb.SSTables()
	if err != nil {
		return res, fmt.Errorf("pebblekv: list the store's files: %w", err)
	}
	po := db.po.Clone()
	po.EnsureDefaults()
	ropts := po.MakeReaderOptions()
	seen := map[string]bool{}
	for _, level := range levels {
		for _, t := range level {
			path := filepath.Join(db.dir, t.BackingSSTNum.String()+".sst")
			if seen[path] {
				continue
			}
			seen[path] = true
			if err := ctx.Err(); err != nil {
				return res, err
			}
			switch err := checkTable(ctx, path, ropts); {
			case errors.Is(err, os.ErrNotExist):
				// Compacted away since the list was read.
			case err != nil:
				res.Damaged = db.health.add(res.Damaged, Damage{Path: path, Detail: oneLine(err)})
			default:
				res.Tables++
			}
		}
	}
	var st pebble.CheckLevelsStats
	if err := db.pdb.CheckLevels(&st); err != nil {
		var de *DamageError
		if !errors.As(db.named(err), &de) {
			return res, fmt.Errorf("pebblekv: check the levels: %w", err)
		}
		res.Damaged = db.health.add(res.Damaged, de.Damage)
	}
	res.Points = st.NumPoints
	return res, nil
}

// checkTable verifies the checksum of every block of the sstable at path.
func checkTable(ctx context.Context, path string, ropts sstable.ReaderOptions) error {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		_ = f.Close()
		return err
	}
	r, err := sstable.NewReader(ctx, readable, ropts)
	if err != nil {
		_ = readable.Close()
		return err
	}
	defer r.Close()
	return r.ValidateBlockChecksums()
}

// add records d in the store's health, unless a file of that path is
// there already, and returns found with d added (once per path).
func (h *health) add(found []Damage, d Damage) []Damage {
	h.mu.Lock()
	known := false
	for _, o := range h.damage {
		known = known || o.Path == d.Path
	}
	if !known {
		h.damage = append(h.damage, d)
	}
	h.mu.Unlock()
	for _, o := range found {
		if o.Path == d.Path {
			return found
		}
	}
	return append(found, d)
}
