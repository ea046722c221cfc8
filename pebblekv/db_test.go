package pebblekv

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// writeEverything writes one of each kind of thing inside tx.
func writeEverything(tx *Tx) error {
	if err := tx.KVPut("notes", "k", []byte("v")); err != nil {
		return err
	}
	if _, _, err := tx.Accept(root("s1", "d1"), Limits{}); err != nil {
		return err
	}
	if err := tx.PutRecord(KindWork, "w1", map[string]string{"state": "open"}); err != nil {
		return err
	}
	return tx.SetKVLayoutVersion("notes", 1)
}

// assertNothing checks that nothing writeEverything writes is there.
func assertNothing(t *testing.T, db *DB) {
	t.Helper()
	view(t, db, func(r *Reader) error {
		if _, _, found, _ := r.KVGet("notes", "k"); found {
			t.Error("KV write applied")
		}
		if seq, _ := r.LatestSequence(); seq != 0 {
			t.Errorf("sequence %d", seq)
		}
		if found, _ := r.GetRecord(KindWork, "w1", &map[string]string{}); found {
			t.Error("record applied")
		}
		if _, recorded, _ := r.KVLayoutVersion("notes"); recorded {
			t.Error("layout version applied")
		}
		return nil
	})
}

func TestUpdateFailureAppliesNothing(t *testing.T) {
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name string
		fail func() error
	}{
		{"fn returns an error", func() error { return errStop }},
		{"fn panics", func() error { panic("boom") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil && p != "boom" {
						panic(p)
					}
				}()
				err = db.Update(func(tx *Tx) error {
					if err := writeEverything(tx); err != nil {
						return err
					}
					return tc.fail()
				})
			}()
			if err != nil && !errors.Is(err, errStop) {
				t.Fatal(err)
			}
			assertNothing(t, db)
			// The DB is usable after: the writer lock was released.
			update(t, db, writeEverything)
			if seq := latest(t, db); seq != 1 {
				t.Errorf("sequence %d after a good Update, want 1", seq)
			}
		})
	}
}

func TestUpdateReadsItsOwnWritesAndLaterReadsSeeThem(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		if err := writeEverything(tx); err != nil {
			return err
		}
		if v, _, found, err := tx.KVGet("notes", "k"); err != nil || !found || string(v) != "v" {
			t.Errorf("own KV write: %q %v %v", v, found, err)
		}
		if items, _, err := tx.KVList("notes", "", "", 0); err != nil || len(items) != 1 {
			t.Errorf("own KV write listed: %d %v", len(items), err)
		}
		if evs, err := tx.ScopeEvents([]string{"s1"}, 0, 0); err != nil || len(evs) != 1 {
			t.Errorf("own event: %d %v", len(evs), err)
		}
		return nil
	})
	view(t, db, func(r *Reader) error {
		if v, _, _, _ := r.KVGet("notes", "k"); string(v) != "v" {
			t.Errorf("KV %q", v)
		}
		if evs, _ := r.Events(0, 0); len(evs) != 1 {
			t.Errorf("%d events", len(evs))
		}
		return nil
	})
}

func TestViewIsASnapshot(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error { return tx.KVPut("notes", "k", []byte("old")) })
	view(t, db, func(r *Reader) error {
		// An Update commits while the View is open.
		done := make(chan error)
		go func() {
			done <- db.Update(func(tx *Tx) error {
				if err := tx.KVPut("notes", "k", []byte("new")); err != nil {
					return err
				}
				_, _, err := tx.Accept(root("s1", "d1"), Limits{})
				return err
			})
		}()
		if err := <-done; err != nil {
			return err
		}
		if v, _, _, _ := r.KVGet("notes", "k"); string(v) != "old" {
			t.Errorf("the View saw %q", v)
		}
		if seq, _ := r.LatestSequence(); seq != 0 {
			t.Errorf("the View saw sequence %d", seq)
		}
		return nil
	})
	if v := kvGet(t, db, "notes", "k"); string(v) != "new" {
		t.Errorf("after the View: %q", v)
	}
}

func TestTxIsDoneAfterUpdate(t *testing.T) {
	db := openDB(t, nil)
	var kept *Tx
	var keptReader *Reader
	update(t, db, func(tx *Tx) error { kept = tx; return nil })
	view(t, db, func(r *Reader) error { keptReader = r; return nil })
	if err := kept.KVPut("notes", "k", []byte("v")); !errors.Is(err, ErrTxDone) {
		t.Errorf("write after Update: %v", err)
	}
	if _, _, err := kept.Accept(root("s1", "d"), Limits{}); !errors.Is(err, ErrTxDone) {
		t.Errorf("accept after Update: %v", err)
	}
	if _, _, _, err := keptReader.KVGet("notes", "k"); !errors.Is(err, ErrTxDone) {
		t.Errorf("read after View: %v", err)
	}
	if _, err := keptReader.ScopeEvents([]string{"s1"}, 0, 0); !errors.Is(err, ErrTxDone) {
		t.Errorf("scope read after View: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	update(t, db, writeEverything)
	first := accept(t, db, root("s1", "d2"), Limits{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := db.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Update after Close: %v", err)
	}
	if err := db.View(func(*Reader) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("View after Close: %v", err)
	}

	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	view(t, db, func(r *Reader) error {
		if v, _, _, _ := r.KVGet("notes", "k"); string(v) != "v" {
			t.Errorf("KV %q", v)
		}
		var rec map[string]string
		if found, err := r.GetRecord(KindWork, "w1", &rec); err != nil || !found || rec["state"] != "open" {
			t.Errorf("record %v %v %v", rec, found, err)
		}
		if v, _, err := r.KVLayoutVersion("notes"); err != nil || v != 1 {
			t.Errorf("layout %d %v", v, err)
		}
		return nil
	})
	// Dedupe still holds, and the sequence continues.
	update(t, db, func(tx *Tx) error {
		ev, added, err := tx.Accept(root("s1", "d2"), Limits{})
		if added || ev.Seq != first.Seq {
			t.Errorf("duplicate after reopen: added %v seq %d", added, ev.Seq)
		}
		return err
	})
	next := accept(t, db, root("s1", "d3"), Limits{})
	if next.Seq != first.Seq+1 {
		t.Errorf("sequence after reopen %d, want %d", next.Seq, first.Seq+1)
	}
}

func TestOpen(t *testing.T) {
	t.Run("creates a private directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "store")
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("dir mode %v %v, want 0700", fi.Mode().Perm(), err)
		}
	})
	t.Run("refuses a newer store layout", func(t *testing.T) {
		dir := t.TempDir()
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.pdb.Set(metaFormat, []byte("99"), nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := Open(dir, nil); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Errorf("Open of a newer store: %v", err)
		}
	})
	t.Run("logs Pebble's lines to the logger, its info at debug level", func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		slogLogger{l: logger}.Infof("hello %d\n", 1)
		if buf.Len() != 0 {
			t.Errorf("Pebble's info line reached a logger at the default level: %q", buf.String())
		}
		slogLogger{l: logger}.Errorf("trouble %d\n", 2)
		if !strings.Contains(buf.String(), "trouble 2") || !strings.Contains(buf.String(), "component=pebble") {
			t.Errorf("log %q", buf.String())
		}
		buf.Reset()
		debug := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		slogLogger{l: debug}.Infof("hello %d\n", 1)
		if !strings.Contains(buf.String(), "hello 1") || !strings.Contains(buf.String(), "level=DEBUG") {
			t.Errorf("at debug level: %q", buf.String())
		}
		db := openDB(t, &Options{Logger: logger, NoSync: true})
		update(t, db, writeEverything)
	})
}

func TestRecords(t *testing.T) {
	db := openDB(t, nil)
	type work struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	update(t, db, func(tx *Tx) error {
		for _, id := range []string{"w/1", "w/2", "w/10", "x/1"} {
			if err := tx.PutRecord(KindWork, id, work{ID: id, State: "open"}); err != nil {
				return err
			}
		}
		// Another kind, and a kind that extends this one, stay apart.
		if err := tx.PutRecord(KindWait, "w/1", work{ID: "wait"}); err != nil {
			return err
		}
		return tx.PutRecord("worker", "w/1", work{ID: "worker"})
	})
	update(t, db, func(tx *Tx) error {
		if err := tx.PutRecord(KindWork, "w/2", work{ID: "w/2", State: "done"}); err != nil {
			return err
		}
		return tx.DeleteRecord(KindWork, "w/10")
	})
	view(t, db, func(r *Reader) error {
		var w work
		if found, err := r.GetRecord(KindWork, "w/2", &w); err != nil || !found || w.State != "done" {
			t.Errorf("w/2 = %+v %v %v", w, found, err)
		}
		if found, err := r.GetRecord(KindWork, "w/10", &w); err != nil || found {
			t.Errorf("deleted w/10 found=%v err=%v", found, err)
		}
		var ids []string
		err := r.ListRecords(KindWork, "w/", func(id string, raw []byte) error {
			ids = append(ids, id)
			return nil
		})
		if err != nil || !slices.Equal(ids, []string{"w/1", "w/2"}) {
			t.Errorf("listed %q %v", ids, err)
		}
		errStop := errors.New("stop")
		n := 0
		err = r.ListRecords(KindWork, "", func(string, []byte) error { n++; return errStop })
		if !errors.Is(err, errStop) || n != 1 {
			t.Errorf("a callback error: %v after %d", err, n)
		}
		return nil
	})
	for _, tc := range []struct{ kind, id string }{{"", "x"}, {"Work", "x"}, {"wo rk", "x"}, {KindWork, ""}} {
		err := db.Update(func(tx *Tx) error { return tx.PutRecord(tc.kind, tc.id, 1) })
		wantCode(t, err, protocol.ErrInvalid)
	}
}
