package engine

import (
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestStandingWorkJoinedPastItsTailCountsAndIndexesEveryInput: Events
// routed to one standing Work beyond the record's tail all join it, in
// order; the record keeps the latest and the index all of them.
func TestStandingWorkJoinedPastItsTailCountsAndIndexesEveryInput(t *testing.T) {
	const total = pebblekv.WorkTail + 6
	r := issueRig(t, protocol.WorkKind{Standing: true}, false)
	var want []string
	for range total {
		want = append(want, r.accept("s", "tracker.issue", map[string]string{"key": "issue:1"}).ID)
	}
	// Negative control: another key's Event is no input of it.
	other := r.accept("s", "tracker.issue", map[string]string{"key": "issue:2"})
	_, ow := r.routed(other)
	d, w := r.routed(r.mustEvent(want[total-1]))
	if d.Created || ow.ID == w.ID || w.InputCount != total || !slices.Equal(w.Inputs, want[total-pebblekv.WorkTail:]) || w.Trigger != want[0] {
		t.Fatalf("decision %+v; Work counts %d inputs, tail of %d, trigger %q", d, w.InputCount, len(w.Inputs), w.Trigger)
	}
	var got []string
	if err := r.db.View(func(rd *pebblekv.Reader) error {
		ins, more, err := rd.WorkInputs(w.ID, 0, 0)
		for _, in := range ins {
			got = append(got, in.Event)
		}
		if more {
			t.Error("one page said more")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the Work's inputs are %d, want the %d routed to it in order", len(got), total)
	}
}

// mustEvent reads an accepted Event by ID.
func (r *rig) mustEvent(id string) pebblekv.Event {
	r.t.Helper()
	var ev pebblekv.Event
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		var found bool
		if ev, found, err = rd.Event(id); err == nil && !found {
			r.t.Fatalf("no Event %s", id)
		}
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return ev
}
