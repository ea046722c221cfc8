package pebblekv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// putKeys commits n KV writes in namespace ns, one Update each, with
// values that do not compress (so a store of them spans many blocks).
func putKeys(t *testing.T, db *DB, ns string, n, size int) {
	t.Helper()
	for i := range n {
		update(t, db, func(tx *Tx) error { return tx.KVPut(ns, healthKey(i), healthValue(i, size)) })
	}
}

func healthKey(i int) string { return fmt.Sprintf("key%05d", i) }

func healthValue(i, size int) []byte {
	var b []byte
	for seed := sha256.Sum256(fmt.Appendf(nil, "%d", i)); len(b) < size; seed = sha256.Sum256(seed[:]) {
		b = hex.AppendEncode(b, seed[:])
	}
	return b[:size]
}

// copyStore copies a store's files as they are on disk now, as a crash would
// leave them: the DB in dir stays open.
func copyStore(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// onlyFile is the one file in dir whose name ends in suffix, the largest
// when there are several.
func onlyFile(t *testing.T, dir, suffix string) string {
	t.Helper()
	best, size := "", int64(-1)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), suffix) && fi.Size() > size {
			best, size = filepath.Join(dir, e.Name()), fi.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	return best
}

// flipByte inverts one byte of path at offset.
func flipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// writtenEnd is where the bytes of the WAL at path end (WrittenEnd).
func writtenEnd(t *testing.T, path string) int64 {
	t.Helper()
	end, err := WrittenEnd(path)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

func TestOpenReportsWhereEachWALReplayStopped(t *testing.T) {
	const commits = 200
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, wal string)
		lost   bool
	}{
		{"an intact WAL is read to its end", func(*testing.T, string) {}, false},
		{"a truncated WAL stops at the cut", func(t *testing.T, wal string) {
			if err := os.Truncate(wal, writtenEnd(t, wal)/2); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a flipped byte stops the replay before it", func(t *testing.T, wal string) {
			flipByte(t, wal, writtenEnd(t, wal)/3)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := openDB(t, nil)
			putKeys(t, live, "n", commits, 64)
			dir := copyStore(t, live.Dir())
			wal := onlyFile(t, dir, ".log")
			tc.damage(t, wal)
			size, end := fileSize(t, wal), writtenEnd(t, wal)
			db, err := Open(dir, &Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rec := db.Recovery()
			if len(rec.Replays) != 1 || rec.Replays[0].WAL != wal || rec.Replays[0].Size != size || rec.Replays[0].End != end {
				t.Fatalf("replays %+v, want one of %s (%d bytes, written to %d)", rec.Replays, wal, size, end)
			}
			if !strings.HasPrefix(filepath.Base(rec.Manifest), "MANIFEST-") || rec.ManifestSize == 0 || rec.ManifestValid != rec.ManifestSize {
				t.Errorf("manifest %q: %d bytes, %d valid", rec.Manifest, rec.ManifestSize, rec.ManifestValid)
			}
			r := rec.Replays[0]
			switch {
			case !tc.lost && (db.Commits() != commits || r.Unread() != 0):
				t.Errorf("intact: %d commits, stopped at %d of the %d bytes written", db.Commits(), r.Offset, r.End)
			case tc.lost && (db.Commits() >= commits || r.Unread() == 0 || r.Keys == 0):
				t.Errorf("damaged: %d commits of %d, stopped at %d of the %d bytes written after %d keys", db.Commits(), commits, r.Offset, r.End, r.Keys)
			}
			if db.ID() != live.ID() || db.ID() == "" {
				t.Errorf("the copy's identity %q, the store's %q", db.ID(), live.ID())
			}
		})
	}
}

func TestReadOnlyOpenChangesNoFile(t *testing.T) {
	live := openDB(t, nil)
	putKeys(t, live, "n", 20, 64)
	dir := copyStore(t, live.Dir())
	listing := func() []string {
		var out []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			fi, _ := e.Info()
			if e.Name() == "LOCK" {
				continue // Pebble's lock, taken by any open
			}
			out = append(out, fmt.Sprintf("%s %d %v", e.Name(), fi.Size(), fi.ModTime()))
		}
		return out
	}
	before := listing()
	db, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := kvGet(t, db, "n", healthKey(19)); !bytes.Equal(got, healthValue(19, 64)) {
		t.Errorf("read-only read %q", got)
	}
	if err := db.Update(func(tx *Tx) error { return tx.KVPut("n", "x", []byte("y")) }); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Update on a read-only store: %v", err)
	}
	db.Close()
	if after := listing(); !slices.Equal(before, after) {
		t.Errorf("files changed:\n%v\n%v", before, after)
	}
}

func TestOpenWithoutAStoreIsErrNoStoreWhenItMustExist(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		dir  func(t *testing.T) string
	}{
		{"missing directory, read-only", Options{ReadOnly: true}, func(t *testing.T) string { return filepath.Join(t.TempDir(), "gone") }},
		{"missing directory, must exist", Options{MustExist: true}, func(t *testing.T) string { return filepath.Join(t.TempDir(), "gone") }},
		{"empty directory, read-only", Options{ReadOnly: true}, func(t *testing.T) string { return t.TempDir() }},
		{"empty directory, must exist", Options{MustExist: true}, func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			if _, err := Open(dir, &tc.opts); !errors.Is(err, ErrNoStore) {
				t.Fatalf("Open: %v, want ErrNoStore", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("Open created %d files", len(entries))
			}
		})
	}
	// Negative control: without either option a store is made.
	db, err := Open(filepath.Join(t.TempDir(), "new"), nil)
	if err != nil || db.ID() == "" {
		t.Fatalf("a new store: %v, id %q", err, db.ID())
	}
	db.Close()
}

func TestCommitsCountUpdatesThatWrote(t *testing.T) {
	dir := t.TempDir()
	var seen []uint64
	db, err := Open(dir, &Options{Committed: func(n uint64) { seen = append(seen, n) }})
	if err != nil {
		t.Fatal(err)
	}
	id := db.ID()
	update(t, db, func(tx *Tx) error { return tx.KVPut("n", "a", []byte("1")) })
	update(t, db, func(*Tx) error { return nil })
	_ = db.Update(func(tx *Tx) error { _ = tx.KVPut("n", "b", []byte("2")); return errors.New("no") })
	update(t, db, func(tx *Tx) error { return tx.KVPut("n", "c", []byte("3")) })
	if db.Commits() != 2 || !slices.Equal(seen, []uint64{1, 2}) {
		t.Errorf("commits %d, hook saw %v; want 2 and [1 2]", db.Commits(), seen)
	}
	db.Close()
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Commits() != 2 || db.ID() != id {
		t.Errorf("after reopen: commits %d id %q, want 2 and %q", db.Commits(), db.ID(), id)
	}
	if other := openDB(t, nil); other.ID() == id {
		t.Error("two stores share an identity")
	}
}

func TestUpdateUnderTheReserveIsStorageFullAndWritesNothing(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error { return tx.KVPut("n", "before", []byte("1")) })
	free, _, err := db.Space()
	if err != nil {
		t.Skipf("statfs cannot read the free space here: %v", err)
	}
	// As if the disk were full: the reserve is more than is free.
	db.reserve = free + 1<<40
	err = db.Update(func(tx *Tx) error { return tx.KVPut("n", "during", []byte("2")) })
	wantCode(t, err, protocol.ErrStorageFull)
	if !strings.Contains(err.Error(), db.Dir()) || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("message %q", err)
	}
	if kvGet(t, db, "n", "during") != nil || db.Commits() != 1 {
		t.Errorf("the refused write applied (commits %d)", db.Commits())
	}
	if got := kvGet(t, db, "n", "before"); string(got) != "1" {
		t.Errorf("reads stopped working: %q", got)
	}
	// Space returns: the next Update goes through, on the same DB.
	db.reserve = DefaultReserve
	if free < DefaultReserve+1<<20 {
		db.reserve = -1
	}
	update(t, db, func(tx *Tx) error { return tx.KVPut("n", "after", []byte("3")) })
	if got := kvGet(t, db, "n", "after"); string(got) != "3" {
		t.Errorf("after space returned: %q", got)
	}
}

func TestDamagedSSTableIsAnErrorNamingTheFile(t *testing.T) {
	const keys, size = 300, 1000
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	putKeys(t, db, "n", keys, size)
	db.Close()
	// Reopening flushes what the WAL held into an sstable.
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Check(context.Background())
	if err != nil || len(res.Damaged) != 0 || res.Tables == 0 || res.Points < keys {
		t.Fatalf("check of the sound store: %+v %v", res, err)
	}
	db.Close()
	sst := onlyFile(t, dir, ".sst")
	flipByte(t, sst, fileSize(t, sst)/2)

	var logBuf bytes.Buffer
	db, err = Open(dir, &Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var bad, good int
	for i := range keys {
		err := db.View(func(r *Reader) error {
			v, _, _, err := r.KVGet("n", healthKey(i))
			if err == nil && !bytes.Equal(v, healthValue(i, size)) {
				t.Errorf("key %d read back wrong", i)
			}
			return err
		})
		var de *DamageError
		switch {
		case err == nil:
			good++
		case errors.As(err, &de) && errors.Is(err, ErrDamaged) && de.Path == sst && strings.Contains(err.Error(), sst):
			bad++
		default:
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if bad == 0 || good == 0 {
		t.Errorf("%d keys unreadable, %d readable: want some of each", bad, good)
	}
	if h := db.Health(); len(h.Damaged) != 1 || h.Damaged[0].Path != sst || h.Failed != nil {
		t.Errorf("health %+v", h)
	}
	if !strings.Contains(logBuf.String(), sst) {
		t.Errorf("the log does not name the file: %s", logBuf.String())
	}
	// Writes go on beside the damaged file.
	update(t, db, func(tx *Tx) error { return tx.KVPut("m", "new", []byte("1")) })
	res, err = db.Check(context.Background())
	if err != nil || len(res.Damaged) != 1 || res.Damaged[0].Path != sst {
		t.Errorf("deep check: %+v %v", res, err)
	}
}

func TestPebbleFatalStopsTheStoreWithAnErrorNotAPanic(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	update(t, db, func(tx *Tx) error { return tx.KVPut("n", "a", []byte("1")) })
	err = db.Update(func(tx *Tx) error {
		_ = tx.KVPut("n", "b", []byte("2"))
		// What Pebble does when its WAL or MANIFEST cannot take a write.
		db.po.Logger.Fatalf("MANIFEST sync failed: %s", "no space left on device")
		return nil
	})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Update: %v", err)
	}
	if err := db.Update(func(*Tx) error { t.Error("an Update ran on a failed store"); return nil }); !errors.Is(err, ErrFailed) {
		t.Errorf("next Update: %v", err)
	}
	if err := db.View(func(*Reader) error { return nil }); !errors.Is(err, ErrFailed) {
		t.Errorf("View: %v", err)
	}
	if h := db.Health(); !errors.Is(h.Failed, ErrFailed) {
		t.Errorf("health %+v", h)
	}
	if err := db.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close of a failed store: %v", err)
	}
	// Any other panic still passes through.
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v", r)
		}
	}()
	healthy := openDB(t, nil)
	_ = healthy.Update(func(*Tx) error { panic("boom") })
}

func TestRepeatingPebbleErrorsAreCountedNotRepeated(t *testing.T) {
	var buf bytes.Buffer
	db := openDB(t, &Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	for i := range 1000 {
		db.health.background(fmt.Errorf("flush: create %06d.sst: no space left on device", i))
	}
	db.health.background(errors.New("another failure"))
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("%d lines for 1000 repeats and one other:\n%s", n, buf.String())
	}
	if h := db.Health(); h.BackgroundErrors != 1001 || h.LastBackground != "another failure" {
		t.Errorf("health %+v", h)
	}
}

func TestManifestSyncsAreReportedAndDamageIsFound(t *testing.T) {
	dir := t.TempDir()
	var marks []ManifestMark
	var mu sync.Mutex
	db, err := Open(dir, &Options{ManifestSynced: func(m ManifestMark) { mu.Lock(); marks = append(marks, m); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	opened := db.Manifest()
	putKeys(t, db, "n", 50, 64)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := db.Manifest()
	mu.Lock()
	got := slices.Clone(marks)
	mu.Unlock()
	if !opened.Less(flushed) || len(got) == 0 || got[len(got)-1] != flushed {
		t.Fatalf("opened at %+v, flushed to %+v, reported %+v", opened, flushed, got)
	}
	db.Close()
	path := filepath.Join(dir, flushed.Name)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		valid  func(size int64) bool
	}{
		{"intact", func(*testing.T, string) {}, func(size int64) bool { return size == flushed.Size }},
		{"a flipped byte in the last edit", func(t *testing.T, path string) { flipByte(t, path, flushed.Size-5) }, func(size int64) bool { return size < flushed.Size && size >= opened.Size }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copyDir := copyStore(t, dir)
			tc.damage(t, filepath.Join(copyDir, flushed.Name))
			ro, err := Open(copyDir, &Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			rec := ro.Recovery()
			if rec.ManifestSize != flushed.Size || !tc.valid(rec.ManifestValid) {
				t.Errorf("%s: %d bytes, %d valid; synced %d", path, rec.ManifestSize, rec.ManifestValid, flushed.Size)
			}
		})
	}
}
