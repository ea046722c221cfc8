package pebblekv

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

func TestAcceptSequenceIncreases(t *testing.T) {
	db := openDB(t, nil)
	if seq := latest(t, db); seq != 0 {
		t.Fatalf("empty log at sequence %d", seq)
	}
	for i := 1; i <= 5; i++ {
		ev := accept(t, db, root("s1", fmt.Sprint(i)), Limits{})
		if ev.Seq != uint64(i) || ev.ID != digest.EmittedEventID("notes", fmt.Sprint(i)) || ev.Root != ev.ID || ev.Depth != 0 {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	// Several in one Update take consecutive sequences.
	update(t, db, func(tx *Tx) error {
		for _, d := range []string{"6", "7"} {
			if _, _, err := tx.Accept(root("s1", d), Limits{}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(r *Reader) error {
		all, err := r.Events(0, 0)
		if err != nil {
			return err
		}
		if got := seqs(all); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6, 7}) {
			t.Errorf("log %v", got)
		}
		page, err := r.Events(2, 2)
		if err != nil {
			return err
		}
		if got := seqs(page); !slices.Equal(got, []uint64{3, 4}) {
			t.Errorf("Events(2, 2) = %v", got)
		}
		if n, err := r.LatestSequence(); err != nil || n != 7 {
			t.Errorf("latest %d %v", n, err)
		}
		return nil
	})
}

func TestAcceptDuplicateReturnsTheExistingEvent(t *testing.T) {
	db := openDB(t, nil)
	first := accept(t, db, root("s1", "d1"), Limits{})
	again := root("s1", "d1")
	again.Payload.Data = []byte(`{"n":2}`)
	again.Works = []string{"work-1"}
	var dup Event
	update(t, db, func(tx *Tx) error {
		var added bool
		var err error
		dup, added, err = tx.Accept(again, Limits{})
		if added {
			t.Error("duplicate added")
		}
		return err
	})
	if dup.ID != first.ID || dup.Seq != first.Seq || string(dup.Payload.Data) != `{"n":1}` || dup.Works != nil {
		t.Errorf("duplicate returned %+v, want the first %+v", dup, first)
	}
	if seq := latest(t, db); seq != 1 {
		t.Errorf("latest %d after a duplicate, want 1", seq)
	}
	view(t, db, func(r *Reader) error {
		evs, err := r.ScopeEvents([]string{"s1"}, 0, 0)
		if err != nil || len(evs) != 1 {
			t.Errorf("scope index holds %d events (%v), want 1", len(evs), err)
		}
		works, err := r.WorkEvents("work-1", 0, 0)
		if err != nil || len(works) != 0 {
			t.Errorf("a duplicate linked work-1: %d events %v", len(works), err)
		}
		byDelivery, found, err := r.EventByDelivery("notes", "d1")
		if err != nil || !found || byDelivery.Seq != 1 {
			t.Errorf("EventByDelivery = %+v %v %v", byDelivery, found, err)
		}
		return nil
	})
}

func TestAcceptRefusesMalformedInput(t *testing.T) {
	db := openDB(t, nil)
	for _, tc := range []struct {
		name string
		edit func(in *EventInput)
	}{
		{"no source", func(in *EventInput) { in.Source = "" }},
		{"no delivery", func(in *EventInput) { in.DeliveryID = "" }},
		{"no type", func(in *EventInput) { in.Type = "" }},
		{"empty work", func(in *EventInput) { in.Works = []string{""} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := root("s1", "d1")
			tc.edit(&in)
			err := db.Update(func(tx *Tx) error { _, _, err := tx.Accept(in, Limits{}); return err })
			wantCode(t, err, protocol.ErrInvalid)
		})
	}
}

func TestAcceptCausation(t *testing.T) {
	db := openDB(t, nil)
	r := accept(t, db, root("s1", "root"), Limits{})
	c := accept(t, db, child(r, "child"), Limits{})
	g := accept(t, db, child(c, "grandchild"), Limits{})
	for _, tc := range []struct {
		ev           Event
		parent, root string
		depth        int
		name         string
	}{
		{r, "", r.ID, 0, "root"},
		{c, r.ID, r.ID, 1, "child"},
		{g, c.ID, r.ID, 2, "grandchild"},
	} {
		if tc.ev.Parent != tc.parent || tc.ev.Root != tc.root || tc.ev.Depth != tc.depth {
			t.Errorf("%s: parent %q root %q depth %d, want %q %q %d", tc.name, tc.ev.Parent, tc.ev.Root, tc.ev.Depth, tc.parent, tc.root, tc.depth)
		}
	}
	other := accept(t, db, root("s2", "other-scope"), Limits{})

	for _, tc := range []struct {
		name string
		in   EventInput
	}{
		{"parent not in the log", child(Event{ID: "ev_missing", Scope: "s1"}, "orphan")},
		{"parent in another scope", child(Event{ID: other.ID, Scope: "s1"}, "crosser")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := latest(t, db)
			err := db.Update(func(tx *Tx) error {
				// A write earlier in the same transaction goes too.
				if err := tx.KVPut("notes", "k", []byte("v")); err != nil {
					return err
				}
				_, _, err := tx.Accept(tc.in, Limits{})
				return err
			})
			wantCode(t, err, protocol.ErrNotFound)
			if after := latest(t, db); after != before {
				t.Errorf("sequence moved from %d to %d", before, after)
			}
			if v := kvGet(t, db, "notes", "k"); v != nil {
				t.Errorf("the transaction's KV write applied")
			}
			view(t, db, func(r *Reader) error {
				if _, found, _ := r.EventByDelivery(tc.in.Source, tc.in.DeliveryID); found {
					t.Error("the refused event is in the log")
				}
				return nil
			})
		})
	}
}

func TestAcceptCausalDepthLimit(t *testing.T) {
	db := openDB(t, nil)
	lim := Limits{MaxDepth: 2}
	ev := accept(t, db, root("s1", "d0"), lim)
	ev = accept(t, db, child(ev, "d1"), lim)
	ev = accept(t, db, child(ev, "d2"), lim)
	update(t, db, func(tx *Tx) error {
		_, _, err := tx.Accept(child(ev, "d3"), lim)
		wantCode(t, err, protocol.ErrCausalLimit)
		// The refusal wrote nothing; the rest of the transaction goes on.
		_, added, err := tx.Accept(root("s1", "fresh"), lim)
		if !added {
			t.Error("a fresh root after a refusal was not added")
		}
		return err
	})
	if seq := latest(t, db); seq != 4 {
		t.Errorf("latest %d, want 4 (three in the chain and the fresh root)", seq)
	}
	// Without the limit the same event is accepted.
	if got := accept(t, db, child(ev, "d3"), Limits{}); got.Depth != 3 {
		t.Errorf("depth %d, want 3", got.Depth)
	}
}

func TestAcceptPerMinuteLimit(t *testing.T) {
	db := openDB(t, nil)
	lim := Limits{PerMinute: 3}
	minute := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	at := func(in EventInput, d time.Duration) EventInput { in.Time = minute.Add(d); return in }
	r1 := accept(t, db, at(root("s1", "r1"), 0), lim)
	r2 := accept(t, db, at(root("s1", "r2"), 0), lim)
	for i := range 3 {
		accept(t, db, at(child(r1, fmt.Sprint("a", i)), time.Duration(i)*10*time.Second), lim)
	}
	err := db.Update(func(tx *Tx) error {
		_, _, err := tx.Accept(at(child(r1, "a3"), 59*time.Second), lim)
		return err
	})
	wantCode(t, err, protocol.ErrCausalLimit)

	// Grandchildren count against the same root.
	var a0 Event
	view(t, db, func(r *Reader) error { a0, _, err = r.EventByDelivery("notes", "a0"); return err })
	err = db.Update(func(tx *Tx) error { _, _, err := tx.Accept(at(child(a0, "g0"), 30*time.Second), lim); return err })
	wantCode(t, err, protocol.ErrCausalLimit)

	// The next minute, another chain, and roots are not limited by it.
	accept(t, db, at(child(r1, "next-minute"), time.Minute), lim)
	for i := range 3 {
		accept(t, db, at(child(r2, fmt.Sprint("b", i)), 0), lim)
	}
	accept(t, db, at(root("s1", "r3"), 0), lim)
	// Without the limit the chain goes on.
	accept(t, db, at(child(r1, "a3"), 59*time.Second), Limits{})
}

func TestScopeEventsMergesScopesInSequenceOrder(t *testing.T) {
	db := openDB(t, nil)
	scopes := []string{"a", "b", "c", ""}
	byScope := map[string][]uint64{}
	update(t, db, func(tx *Tx) error {
		for i := range 40 {
			s := scopes[i%len(scopes)]
			if i%7 == 0 {
				s = "c" // uneven runs
			}
			ev, _, err := tx.Accept(root(s, fmt.Sprint(i)), Limits{})
			if err != nil {
				return err
			}
			byScope[s] = append(byScope[s], ev.Seq)
		}
		return nil
	})
	want := func(scopes []string, after uint64, limit int) []uint64 {
		var all []uint64
		for _, s := range slices.Compact(slices.Sorted(slices.Values(scopes))) {
			all = append(all, byScope[s]...)
		}
		slices.Sort(all)
		out := []uint64{}
		for _, seq := range all {
			if seq > after && len(out) < limit {
				out = append(out, seq)
			}
		}
		return out
	}
	for _, tc := range []struct {
		scopes []string
		after  uint64
		limit  int
	}{
		{[]string{"a"}, 0, 0},
		{[]string{"a", "c"}, 0, 0},
		{[]string{"c", "a"}, 5, 4},
		{[]string{"a", "b", "c", ""}, 0, 0},
		{[]string{""}, 0, 0},
		{[]string{"a", "a", "b"}, 10, 3},
		{[]string{"nowhere"}, 0, 0},
		{[]string{"a", "c"}, 40, 0},
		{nil, 0, 0},
	} {
		t.Run(fmt.Sprintf("%q after %d limit %d", tc.scopes, tc.after, tc.limit), func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = MaxEvents
			}
			view(t, db, func(r *Reader) error {
				evs, err := r.ScopeEvents(tc.scopes, tc.after, tc.limit)
				if err != nil {
					return err
				}
				if got := seqs(evs); !slices.Equal(got, want(tc.scopes, tc.after, limit)) {
					t.Errorf("got %v, want %v", got, want(tc.scopes, tc.after, limit))
				}
				for _, ev := range evs {
					if !slices.Contains(tc.scopes, ev.Scope) {
						t.Errorf("event %d of scope %q", ev.Seq, ev.Scope)
					}
				}
				return nil
			})
		})
	}

	t.Run("paging by three collects a and c once", func(t *testing.T) {
		var got []uint64
		var after uint64
		for {
			var page []Event
			view(t, db, func(r *Reader) error {
				var err error
				page, err = r.ScopeEvents([]string{"a", "c"}, after, 3)
				return err
			})
			if len(page) == 0 {
				break
			}
			got = append(got, seqs(page)...)
			after = page[len(page)-1].Seq
		}
		if !slices.Equal(got, want([]string{"a", "c"}, 0, MaxEvents)) {
			t.Errorf("paged %v", got)
		}
	})
}

func TestWorkEvents(t *testing.T) {
	db := openDB(t, nil)
	named := root("s1", "named")
	named.Works = []string{"w1", "w2", "w1"}
	e1 := accept(t, db, named, Limits{})
	e2 := accept(t, db, root("s1", "unrelated"), Limits{})
	e3 := accept(t, db, root("s2", "routed"), Limits{})
	update(t, db, func(tx *Tx) error {
		if err := tx.LinkWork(e3.ID, "w1"); err != nil {
			return err
		}
		return tx.LinkWork(e3.ID, "w1") // again: no second entry
	})
	err := db.Update(func(tx *Tx) error { return tx.LinkWork("ev_missing", "w1") })
	wantCode(t, err, protocol.ErrNotFound)

	view(t, db, func(r *Reader) error {
		for _, tc := range []struct {
			work  string
			after uint64
			limit int
			want  []uint64
		}{
			{"w1", 0, 0, []uint64{e1.Seq, e3.Seq}},
			{"w1", e1.Seq, 0, []uint64{e3.Seq}},
			{"w1", 0, 1, []uint64{e1.Seq}},
			{"w2", 0, 0, []uint64{e1.Seq}},
			{"w3", 0, 0, []uint64{}},
		} {
			evs, err := r.WorkEvents(tc.work, tc.after, tc.limit)
			if err != nil {
				return err
			}
			if got := seqs(evs); !slices.Equal(got, tc.want) {
				t.Errorf("WorkEvents(%s, %d, %d) = %v, want %v", tc.work, tc.after, tc.limit, got, tc.want)
			}
		}
		ev, _, err := r.Event(e1.ID)
		if err != nil || !slices.Equal(ev.Works, []string{"w1", "w2"}) {
			t.Errorf("e1 works %q %v", ev.Works, err)
		}
		ev, _, err = r.Event(e3.ID)
		if err != nil || !slices.Equal(ev.Works, []string{"w1"}) {
			t.Errorf("e3 works %q %v", ev.Works, err)
		}
		if ev, _, _ := r.Event(e2.ID); ev.Works != nil {
			t.Errorf("e2 works %q", ev.Works)
		}
		return nil
	})
}

func TestCommitKVEmissions(t *testing.T) {
	emission := func(delivery, parent string) protocol.Emission {
		return protocol.Emission{Scope: "s1", Source: "notes/web", DeliveryID: delivery, Type: "notes.changed", Parent: parent,
			Payload: protocol.Payload{Schema: "notes.changed.v1", Data: []byte(`{}`)}}
	}
	put := protocol.KVPut{Namespace: "notes", Key: "k", Value: []byte("v")}
	id := func(delivery string) string { return digest.EmittedEventID("notes/web", delivery) }

	t.Run("accepted with the puts, duplicates not added", func(t *testing.T) {
		db := openDB(t, nil)
		p := protocol.KVCommitParams{Puts: []protocol.KVPut{put},
			Emissions: []protocol.Emission{emission("r", ""), emission("c", id("r"))}}
		res, err := db.CommitKV("notes", p, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.EmissionResult{{EventID: id("r"), Added: true}, {EventID: id("c"), Added: true}}
		if !slices.Equal(res.Emissions, want) {
			t.Errorf("emissions %+v, want %+v", res.Emissions, want)
		}
		if string(kvGet(t, db, "notes", "k")) != "v" || latest(t, db) != 2 {
			t.Error("puts or events missing")
		}
		view(t, db, func(r *Reader) error {
			c, _, err := r.Event(id("c"))
			if c.Parent != id("r") || c.Depth != 1 || c.Scope != "s1" {
				t.Errorf("derived emission %+v", c)
			}
			return err
		})
		res, err = db.CommitKV("notes", p, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want = []protocol.EmissionResult{{EventID: id("r")}, {EventID: id("c")}}
		if !slices.Equal(res.Emissions, want) || latest(t, db) != 2 {
			t.Errorf("again: emissions %+v, latest %d", res.Emissions, latest(t, db))
		}
	})

	t.Run("over the causal limit refused alone", func(t *testing.T) {
		db := openDB(t, nil)
		if _, err := db.CommitKV("notes", protocol.KVCommitParams{Emissions: []protocol.Emission{emission("r", ""), emission("c", id("r"))}}, Limits{}); err != nil {
			t.Fatal(err)
		}
		res, err := db.CommitKV("notes", protocol.KVCommitParams{
			Puts:      []protocol.KVPut{put},
			Emissions: []protocol.Emission{emission("ok1", id("r")), emission("deep", id("c")), emission("ok2", "")},
		}, Limits{MaxDepth: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.EmissionResult{{EventID: id("ok1"), Added: true}, {Refused: "causal_limit"}, {EventID: id("ok2"), Added: true}}
		if !slices.Equal(res.Emissions, want) {
			t.Errorf("emissions %+v, want %+v", res.Emissions, want)
		}
		if string(kvGet(t, db, "notes", "k")) != "v" {
			t.Error("the put did not commit")
		}
		view(t, db, func(r *Reader) error {
			if _, found, _ := r.Event(id("deep")); found {
				t.Error("the refused emission is in the log")
			}
			return nil
		})
		if seq := latest(t, db); seq != 4 {
			t.Errorf("latest %d, want 4", seq)
		}
	})

	for _, tc := range []struct {
		name   string
		parent func(db *DB) string
	}{
		{"parent not found applies nothing", func(*DB) string { return "ev_missing" }},
		{"parent in another scope applies nothing", func(db *DB) string {
			return accept(t, db, EventInput{Scope: "s2", Source: "notes", Type: "notes.changed", DeliveryID: "s2-root"}, Limits{}).ID
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			parent := tc.parent(db)
			before := latest(t, db)
			_, err := db.CommitKV("notes", protocol.KVCommitParams{
				Puts:      []protocol.KVPut{put},
				Emissions: []protocol.Emission{emission("first", ""), emission("bad", parent)},
			}, Limits{})
			wantCode(t, err, protocol.ErrNotFound)
			if kvGet(t, db, "notes", "k") != nil || latest(t, db) != before {
				t.Error("part of the batch applied")
			}
			view(t, db, func(r *Reader) error {
				if _, found, _ := r.Event(id("first")); found {
					t.Error("the good emission before the bad one is in the log")
				}
				return nil
			})
		})
	}
}
