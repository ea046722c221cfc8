package pebblekv

import (
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

func TestObservationBindingIsNeverReplaced(t *testing.T) {
	db := openDB(t, nil)
	o := Observation{Source: "feed/a", Item: "x", Version: "1", Envelope: "e1", Event: "ev_1", Seen: time.Unix(10, 0)}
	update(t, db, func(tx *Tx) error { return tx.PutObservation(o) })
	tests := []struct {
		name string
		o    Observation
		code *protocol.Error
	}{
		{"the same identity with another envelope", Observation{Source: "feed/a", Item: "x", Version: "1", Envelope: "e2", Event: "ev_2"}, protocol.ErrConflict},
		{"the same identity with the same envelope", o, protocol.ErrConflict},
		{"no envelope", Observation{Source: "feed/a", Item: "y", Version: "1", Event: "ev_3"}, protocol.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.Update(func(tx *Tx) error { return tx.PutObservation(tt.o) })
			wantCode(t, err, tt.code)
		})
	}
	// Identities that only share a prefix are apart, and the binding is
	// the first one.
	update(t, db, func(tx *Tx) error {
		return tx.PutObservation(Observation{Source: "feed/a", Item: "x1", Version: "1", Envelope: "e9", Event: "ev_9"})
	})
	view(t, db, func(r *Reader) error {
		got, found, err := r.Observation("feed/a", "x", "1")
		if err != nil || !found || got.Envelope != "e1" || got.Event != "ev_1" {
			t.Errorf("binding of x@1: %+v, %v, %v; want envelope e1", got, found, err)
		}
		if _, found, _ := r.Observation("feed/ab", "x", "1"); found {
			t.Error("another source's identity is bound")
		}
		return nil
	})
}

func TestObservationConflictsAreCountedPerIdentityAndSource(t *testing.T) {
	db := openDB(t, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := ObservationConflict{Source: "feed/a", Item: "x", Version: "1", Bound: "e1", Refused: "e2"}
	for i := range 3 {
		update(t, db, func(tx *Tx) error {
			_, err := tx.RecordConflict(c, t0.Add(time.Duration(i)*time.Minute))
			return err
		})
	}
	update(t, db, func(tx *Tx) error {
		_, err := tx.RecordConflict(ObservationConflict{Source: "feed/ab", Item: "x", Version: "1", Bound: "e1", Refused: "e3"}, t0)
		return err
	})
	view(t, db, func(r *Reader) error {
		cs, err := r.ObservationConflicts("feed/a", 0)
		if err != nil || len(cs) != 1 {
			t.Fatalf("conflicts of feed/a: %+v, %v; want one (not feed/ab's)", cs, err)
		}
		if got := cs[0]; got.Count != 3 || !got.First.Equal(t0) || !got.Last.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("conflict %+v, want counted 3 times from t0 to t0+2m", got)
		}
		return nil
	})
}

func TestCheckpointIsReplacedWhole(t *testing.T) {
	db := openDB(t, nil)
	view(t, db, func(r *Reader) error {
		if _, found, err := r.Checkpoint("feed/a"); found || err != nil {
			t.Errorf("a checkpoint before any: %v, %v", found, err)
		}
		return nil
	})
	for _, cp := range []string{"c1", "c2"} {
		update(t, db, func(tx *Tx) error {
			return tx.PutCheckpoint(Checkpoint{Source: "feed/a", Owner: "feed", Checkpoint: cp, Completed: time.Unix(1, 0)})
		})
	}
	err := db.Update(func(tx *Tx) error { return tx.PutCheckpoint(Checkpoint{Source: "feed/a"}) })
	wantCode(t, err, protocol.ErrInvalid)
	view(t, db, func(r *Reader) error {
		got, found, err := r.Checkpoint("feed/a")
		if err != nil || !found || got.Checkpoint != "c2" || got.Owner != "feed" {
			t.Errorf("checkpoint %+v, %v, %v; want c2", got, found, err)
		}
		return nil
	})
}
