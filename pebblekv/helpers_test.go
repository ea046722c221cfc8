package pebblekv

import (
	"errors"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// openDB opens a store in a fresh directory, closed when the test ends.
func openDB(t testing.TB, opts *Options) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return db
}

// update runs fn in an Update and fails the test on error.
func update(t testing.TB, db *DB, fn func(tx *Tx) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a View and fails the test on error.
func view(t testing.TB, db *DB, fn func(r *Reader) error) {
	t.Helper()
	if err := db.View(fn); err != nil {
		t.Fatal(err)
	}
}

// accept accepts one Event in its own Update.
func accept(t testing.TB, db *DB, in EventInput, lim Limits) Event {
	t.Helper()
	var ev Event
	update(t, db, func(tx *Tx) error {
		var err error
		ev, _, err = tx.Accept(in, lim)
		return err
	})
	return ev
}

// root is an EventInput of a root Event.
func root(scope, delivery string) EventInput {
	return EventInput{Scope: scope, Source: "notes", Type: "notes.changed", DeliveryID: delivery,
		Payload: protocol.Payload{Schema: "notes.changed.v1", Data: []byte(`{"n":1}`)},
		Time:    time.Date(2026, 7, 1, 12, 0, 30, 0, time.UTC)}
}

// child is an EventInput derived from parent.
func child(parent Event, delivery string) EventInput {
	in := root(parent.Scope, delivery)
	in.Parent = parent.ID
	return in
}

// latest reads the latest sequence.
func latest(t testing.TB, db *DB) uint64 {
	t.Helper()
	var seq uint64
	view(t, db, func(r *Reader) error {
		var err error
		seq, err = r.LatestSequence()
		return err
	})
	return seq
}

// kvGet reads one key: its value, or nil when absent.
func kvGet(t testing.TB, db *DB, ns, key string) []byte {
	t.Helper()
	var v []byte
	view(t, db, func(r *Reader) error {
		var err error
		v, _, _, err = r.KVGet(ns, key)
		return err
	})
	return v
}

// seqs returns the sequences of evs.
func seqs(evs []Event) []uint64 {
	out := []uint64{}
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

// wantCode fails unless err carries sentinel's code.
func wantCode(t testing.TB, err error, sentinel *protocol.Error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %s", err, sentinel.Code)
	}
}
