package pebblekv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// rawKeys is every key of family fam, each the caller's copy.
func rawKeys(t *testing.T, db *DB, fam byte) [][]byte {
	t.Helper()
	var out [][]byte
	view(t, db, func(r *Reader) error {
		return r.scan([]byte{fam}, []byte{fam + 1}, func(k, _ []byte) (bool, error) {
			out = append(out, clone(k))
			return true, nil
		})
	})
	return out
}

// splitKey decodes a key of length-prefixed fields followed by a raw last
// field, written by hand here so the test does not trust the store's
// encoder.
func splitKey(t *testing.T, k []byte, fields int) []string {
	t.Helper()
	var out []string
	rest := k[1:]
	for range fields {
		n, size := binary.Uvarint(rest)
		if size <= 0 || len(rest) < size+int(n) {
			t.Fatalf("key %x is malformed", k)
		}
		out = append(out, string(rest[size:size+int(n)]))
		rest = rest[size+int(n):]
	}
	return append(out, string(rest))
}

// indexOf renders each key of fam as its fields joined by "|", sorted.
func indexOf(t *testing.T, db *DB, fam byte, fields int) []string {
	t.Helper()
	var out []string
	for _, k := range rawKeys(t, db, fam) {
		out = append(out, strings.Join(splitKey(t, k, fields), "|"))
	}
	slices.Sort(out)
	return out
}

// wantIndexes checks every Work index against the Work the test expects:
// no entry more and none missing.
func wantIndexes(t *testing.T, db *DB, works ...Work) {
	t.Helper()
	var byState, byScope, scoped, open, keyKind []string
	for _, w := range works {
		byState = append(byState, w.State+"|"+w.ID)
		byScope = append(byScope, w.Scope+"|"+w.ID)
		scoped = append(scoped, w.Scope+"|"+w.State+"|"+w.ID)
		for _, k := range w.Keys {
			keyKind = append(keyKind, w.Scope+"|"+k+"|"+w.Kind+"|"+w.ID)
			if w.State == WorkPending || w.State == WorkRunning || w.State == WorkWaiting {
				open = append(open, w.Scope+"|"+k)
			}
		}
	}
	for _, c := range []struct {
		name   string
		fam    byte
		fields int
		want   []string
	}{
		{"by state", famWorkByState, 1, byState},
		{"by scope", famWorkByScope, 1, byScope},
		{"by scope and state", famWorkScoped, 2, scoped},
		{"open by key", famWorkOpenKey, 1, open},
		{"by key and kind", famWorkKeyKind, 3, keyKind},
	} {
		slices.Sort(c.want)
		if got := indexOf(t, db, c.fam, c.fields); !slices.Equal(got, c.want) {
			t.Errorf("index %s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	if got := len(rawKeys(t, db, famWorkRec)); got != len(works) {
		t.Errorf("%d Work records, want %d", got, len(works))
	}
}

func putWork(t testing.TB, db *DB, w Work) {
	t.Helper()
	update(t, db, func(tx *Tx) error { return tx.PutWork(w) })
}

func workByKey(t *testing.T, db *DB, scope, key string) (id string) {
	t.Helper()
	view(t, db, func(r *Reader) error {
		w, found, err := r.WorkByKey(scope, key)
		if found {
			id = w.ID
		}
		return err
	})
	return id
}

func TestPutWorkKeepsIndexesExactAcrossChanges(t *testing.T) {
	a := Work{ID: "w_a", Scope: "s1", Kind: "manual", State: WorkPending, Keys: []string{"k1", "k2"}}
	for _, tc := range []struct {
		name string
		// change is applied to a after it was written pending.
		change     func(w Work) Work
		wantByKey  map[string]string // key of s1 -> open Work ID ("" for none)
		wantStates map[string]int    // Works(State) count
	}{
		{"a Work moved to running is still found by its keys",
			func(w Work) Work { w.State = WorkRunning; return w },
			map[string]string{"k1": "w_a", "k2": "w_a"}, map[string]int{WorkPending: 0, WorkRunning: 1}},
		{"a Work moved to cancelled is no longer found by WorkByKey",
			func(w Work) Work { w.State, w.Reason = WorkCancelled, "operator: wrong repo"; return w },
			map[string]string{"k1": "", "k2": ""}, map[string]int{WorkPending: 0, WorkCancelled: 1}},
		{"a completed Work releases its keys",
			func(w Work) Work { w.State = WorkCompleted; return w },
			map[string]string{"k1": "", "k2": ""}, map[string]int{WorkPending: 0, WorkCompleted: 1}},
		{"a key dropped from an open Work is released, the others kept",
			func(w Work) Work { w.Keys = []string{"k2", "k3"}; return w },
			map[string]string{"k1": "", "k2": "w_a", "k3": "w_a"}, map[string]int{WorkPending: 1}},
		{"an unchanged Put leaves the indexes as they were",
			func(w Work) Work { return w },
			map[string]string{"k1": "w_a", "k2": "w_a"}, map[string]int{WorkPending: 1, WorkRunning: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			other := Work{ID: "w_b", Scope: "s2", Kind: "manual", State: WorkPending, Keys: []string{"k1"}}
			putWork(t, db, a)
			putWork(t, db, other)
			changed := tc.change(a)
			putWork(t, db, changed)
			wantIndexes(t, db, changed, other)
			for key, want := range tc.wantByKey {
				if got := workByKey(t, db, "s1", key); got != want {
					t.Errorf("WorkByKey(s1, %s) = %q, want %q", key, got, want)
				}
			}
			// Negative control: the other scope's Work on the same key is
			// its own, whatever happened to s1's.
			if got := workByKey(t, db, "s2", "k1"); got != "w_b" {
				t.Errorf("WorkByKey(s2, k1) = %q, want w_b", got)
			}
			view(t, db, func(r *Reader) error {
				for state, n := range tc.wantStates {
					ws, _, err := r.Works(WorkQuery{Scope: "s1", State: state})
					if err != nil {
						return err
					}
					if len(ws) != n {
						t.Errorf("Works(s1, %s) = %d, want %d", state, len(ws), n)
					}
				}
				return nil
			})
		})
	}
}

func TestClosedWorkKeyIsTakenByANewWork(t *testing.T) {
	db := openDB(t, nil)
	old := Work{ID: "w_old", Scope: "s1", Kind: "review", State: WorkPending, Keys: []string{"pr-1"}}
	putWork(t, db, old)
	next := Work{ID: "w_new", Scope: "s1", Kind: "review", State: WorkPending, Keys: []string{"pr-1"}}
	// Negative control: while the old one is open, the key is refused.
	err := db.Update(func(tx *Tx) error { return tx.PutWork(next) })
	if !errors.Is(err, protocol.ErrConflict) || !strings.Contains(err.Error(), "w_old") {
		t.Fatalf("second open Work on a held key: %v, want conflict naming w_old", err)
	}
	old.State = WorkCancelled
	putWork(t, db, old)
	putWork(t, db, next)
	if got := workByKey(t, db, "s1", "pr-1"); got != "w_new" {
		t.Errorf("WorkByKey = %q, want w_new", got)
	}
	wantIndexes(t, db, old, next)
	view(t, db, func(r *Reader) error {
		w, found, err := r.WorkOfKind("s1", "pr-1", "review")
		if err != nil || !found || (w.ID != "w_old" && w.ID != "w_new") {
			t.Errorf("WorkOfKind = %v %v %v", w.ID, found, err)
		}
		if _, found, _ := r.WorkOfKind("s1", "pr-1", "deploy"); found {
			t.Error("WorkOfKind found a Work of another kind")
		}
		if _, found, _ := r.WorkOfKind("s2", "pr-1", "review"); found {
			t.Error("WorkOfKind found another scope's Work")
		}
		return nil
	})
}

func TestWorkOfKindFindsTheKeyAfterItsWorkClosed(t *testing.T) {
	db := openDB(t, nil)
	w := Work{ID: "w_once", Scope: "s1", Kind: "onboard", State: WorkPending, Keys: []string{"user-7"}}
	putWork(t, db, w)
	w.State = WorkCompleted
	putWork(t, db, w)
	view(t, db, func(r *Reader) error {
		if _, found, _ := r.WorkByKey("s1", "user-7"); found {
			t.Error("a completed Work is found by WorkByKey")
		}
		got, found, err := r.WorkOfKind("s1", "user-7", "onboard")
		if err != nil || !found || got.ID != "w_once" || got.State != WorkCompleted {
			t.Errorf("WorkOfKind = %+v %v %v, want the completed w_once", got, found, err)
		}
		return nil
	})
}

func TestPutWorkRefusalWritesNothing(t *testing.T) {
	type refusal struct {
		name string
		work func(inScope, otherScope string) Work
		want error
	}
	base := func() Work {
		return Work{ID: "w_x", Scope: "s1", Kind: "manual", State: WorkPending, Keys: []string{"k"}}
	}
	with := func(f func(w *Work)) func(string, string) Work {
		return func(string, string) Work { w := base(); f(&w); return w }
	}
	for _, tc := range []refusal{
		{"no ID", with(func(w *Work) { w.ID = "" }), protocol.ErrInvalid},
		{"no scope", with(func(w *Work) { w.Scope = "" }), protocol.ErrInvalid},
		{"no kind", with(func(w *Work) { w.Kind = "" }), protocol.ErrInvalid},
		{"unknown state", with(func(w *Work) { w.State = "open" }), protocol.ErrInvalid},
		{"empty key", with(func(w *Work) { w.Keys = []string{"k", ""} }), protocol.ErrInvalid},
		{"repeated key", with(func(w *Work) { w.Keys = []string{"k", "k"} }), protocol.ErrInvalid},
		{"display link not http", with(func(w *Work) {
			w.Display = &protocol.Display{Title: "t", Links: []protocol.Link{{Label: "x", URL: "javascript:alert(1)"}}}
		}), protocol.ErrInvalid},
		{"display title on two lines", with(func(w *Work) { w.Display = &protocol.Display{Title: "a\nb"} }), protocol.ErrInvalid},
		{"key held by another open Work", with(func(w *Work) { w.Keys = []string{"held"} }), protocol.ErrConflict},
		{"moves the held Work to another scope", with(func(w *Work) { w.ID, w.Scope, w.Keys = "w_held", "s2", nil }), protocol.ErrInvalid},
		{"drops the held Work's input", with(func(w *Work) { w.ID, w.Keys = "w_held", []string{"held"} }), protocol.ErrInvalid},
		{"input of another scope", func(_, other string) Work { w := base(); w.Inputs = []string{other}; return w }, protocol.ErrNotFound},
		{"input not in the log", with(func(w *Work) { w.Inputs = []string{"ev_nope"} }), protocol.ErrNotFound},
		{"input named twice", func(in, _ string) Work { w := base(); w.Inputs = []string{in, in}; return w }, protocol.ErrInvalid},
		{"context that is not JSON", with(func(w *Work) { w.Context = []byte(`{"a":`) }), protocol.ErrInvalid},
		{"context past the page budget", with(func(w *Work) {
			w.Context = []byte(`"` + strings.Repeat("c", protocol.MaxPageBytes) + `"`)
		}), protocol.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			in := accept(t, db, root("s1", "in"), Limits{})
			other := accept(t, db, root("s2", "other"), Limits{})
			held := Work{ID: "w_held", Scope: "s1", Kind: "manual", State: WorkPending, Keys: []string{"held"}, Inputs: []string{in.ID}}
			putWork(t, db, held)
			all := func() int {
				n := 0
				for _, fam := range []byte{famWorkRec, famWorkByState, famWorkByScope, famWorkScoped, famWorkOpenKey, famWorkKeyKind, famWork, famWorkInput, famWorkInputID} {
					n += len(rawKeys(t, db, fam))
				}
				return n
			}
			n := all()
			// The refused Put runs inside an Update that goes on to commit
			// something else: the refusal itself must leave nothing behind.
			var putErr error
			update(t, db, func(tx *Tx) error {
				putErr = tx.PutWork(tc.work(in.ID, other.ID))
				return tx.KVPut("notes", "after", []byte("v"))
			})
			if !errors.Is(putErr, tc.want) {
				t.Fatalf("PutWork: %v, want %v", putErr, tc.want)
			}
			if got := all(); got != n {
				t.Errorf("a refused PutWork changed the Work keys: %d, then %d", n, got)
			}
			wantIndexes(t, db, held)
			view(t, db, func(r *Reader) error {
				ev, _, err := r.Event(in.ID)
				if err != nil || !slices.Equal(ev.Works, []string{"w_held"}) {
					t.Errorf("input's Works = %q %v, want only w_held", ev.Works, err)
				}
				return err
			})
		})
	}
}

func TestPutWorkLinksEachNewInput(t *testing.T) {
	db := openDB(t, nil)
	e1 := accept(t, db, root("s1", "e1"), Limits{})
	e2 := accept(t, db, root("s1", "e2"), Limits{})
	e3 := accept(t, db, root("s1", "e3"), Limits{})
	w := Work{ID: NewWorkID(), Scope: "s1", Kind: "manual", State: WorkPending, Inputs: []string{e1.ID}, Trigger: e1.ID}
	putWork(t, db, w)
	var got Work
	update(t, db, func(tx *Tx) error {
		var err error
		if got, err = tx.AddWorkInput(w.ID, e2.ID); err != nil {
			return err
		}
		// Adding it again changes nothing.
		got, err = tx.AddWorkInput(w.ID, e2.ID)
		return err
	})
	if !slices.Equal(got.Inputs, []string{e1.ID, e2.ID}) || got.Trigger != e1.ID {
		t.Errorf("after AddWorkInput: inputs %q trigger %q", got.Inputs, got.Trigger)
	}
	view(t, db, func(r *Reader) error {
		evs, err := r.WorkEvents(w.ID, 0, 0)
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		if !slices.Equal(ids, []string{e1.ID, e2.ID}) {
			t.Errorf("WorkEvents = %q, want e1, e2", ids)
		}
		// Negative control: an Event never routed to the Work is not linked.
		if ev, _, _ := r.Event(e3.ID); len(ev.Works) != 0 {
			t.Errorf("e3 linked to %q", ev.Works)
		}
		return err
	})
	err := db.Update(func(tx *Tx) error { _, err := tx.AddWorkInput("w_missing", e3.ID); return err })
	if !errors.Is(err, protocol.ErrNotFound) {
		t.Errorf("AddWorkInput to a missing Work: %v", err)
	}
}

func TestAddWorkInputSetsTheFirstInputAsTrigger(t *testing.T) {
	db := openDB(t, nil)
	e1 := accept(t, db, root("s1", "e1"), Limits{})
	w := Work{ID: "w_t", Scope: "s1", Kind: "manual", State: WorkPending}
	putWork(t, db, w)
	update(t, db, func(tx *Tx) error {
		got, err := tx.AddWorkInput(w.ID, e1.ID)
		if got.Trigger != e1.ID {
			t.Errorf("trigger %q, want the first input", got.Trigger)
		}
		return err
	})
}

// pageAll reads every page of Works for q, checking each page's bytes.
func pageAll(t *testing.T, db *DB, q WorkQuery) (ids []string, pages []int) {
	t.Helper()
	for range 100 {
		var ws []Work
		var more bool
		view(t, db, func(r *Reader) error {
			var err error
			ws, more, err = r.Works(q)
			return err
		})
		size := 0
		for _, w := range ws {
			ids = append(ids, w.ID)
			size += len(w.Context)
		}
		if len(ws) > 1 && size > protocol.MaxPageBytes {
			t.Errorf("a page of %d Works holds %d bytes of context, over the budget", len(ws), size)
		}
		pages = append(pages, len(ws))
		if !more {
			return ids, pages
		}
		if len(ws) == 0 {
			t.Fatal("an empty page said more")
		}
		q.After = ws[len(ws)-1].ID
	}
	t.Fatal("paging did not end")
	return nil, nil
}

func TestWorksPageByCountBytesAndFilter(t *testing.T) {
	const mib = 1 << 20
	db := openDB(t, nil)
	var all, bigs []string
	update(t, db, func(tx *Tx) error {
		for i := range 12 {
			w := Work{ID: fmt.Sprintf("w_%02d", i), Scope: "s1", Kind: "manual", State: WorkPending}
			if i%3 == 0 {
				w.State = WorkCancelled
			}
			if i >= 6 {
				w.Scope = "s2"
				// About a MiB of context each: four do not fit a page.
				w.Context = []byte(`"` + strings.Repeat("c", mib) + `"`)
				bigs = append(bigs, w.ID)
			}
			all = append(all, w.ID)
			if err := tx.PutWork(w); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct {
		name      string
		q         WorkQuery
		want      []string
		wantPages []int
	}{
		{"by count", WorkQuery{Scope: "s1", Limit: 4}, all[:6], []int{4, 2}},
		{"by bytes, stopping before the budget", WorkQuery{Scope: "s2"}, bigs, []int{3, 3}},
		{"by state across scopes", WorkQuery{State: WorkCancelled, Limit: 3}, []string{"w_00", "w_03", "w_06", "w_09"}, []int{3, 1}},
		{"by scope and state", WorkQuery{Scope: "s1", State: WorkPending}, []string{"w_01", "w_02", "w_04", "w_05"}, []int{4}},
		{"everything", WorkQuery{Limit: 5}, all, []int{5, 4, 3}},
		{"newest first", WorkQuery{Scope: "s1", Limit: 4, Newest: true}, []string{"w_05", "w_04", "w_03", "w_02", "w_01", "w_00"}, []int{4, 2}},
		{"newest first by bytes", WorkQuery{Scope: "s2", Newest: true}, []string{"w_11", "w_10", "w_09", "w_08", "w_07", "w_06"}, []int{3, 3}},
		{"newest first by state across scopes", WorkQuery{State: WorkCancelled, Limit: 3, Newest: true}, []string{"w_09", "w_06", "w_03", "w_00"}, []int{3, 1}},
		{"newest first by scope and state", WorkQuery{Scope: "s1", State: WorkPending, Newest: true}, []string{"w_05", "w_04", "w_02", "w_01"}, []int{4}},
		{"newest first after a cursor", WorkQuery{Scope: "s1", After: "w_03", Newest: true}, []string{"w_02", "w_01", "w_00"}, []int{3}},
		{"newest first after a cursor no Work has", WorkQuery{Scope: "s1", After: "w_03x", Newest: true}, []string{"w_03", "w_02", "w_01", "w_00"}, []int{4}},
		{"newest first after the oldest", WorkQuery{After: "w_00", Newest: true}, nil, []int{0}},
		{"oldest first after the newest", WorkQuery{After: "w_11"}, nil, []int{0}},
		{"a state no Work is in", WorkQuery{State: WorkFailed}, nil, []int{0}},
		{"a scope with no Work", WorkQuery{Scope: "s"}, nil, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := pageAll(t, db, tc.q)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Works = %q, want %q", got, tc.want)
			}
			if !slices.Equal(pages, tc.wantPages) {
				t.Errorf("pages of %v, want %v", pages, tc.wantPages)
			}
		})
	}
	view(t, db, func(r *Reader) error {
		if _, _, err := r.Works(WorkQuery{State: "open"}); !errors.Is(err, protocol.ErrInvalid) {
			t.Errorf("Works of an unknown state: %v", err)
		}
		return nil
	})
}

func TestNewWorkIDIsUniqueAndSortsByTime(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewWorkID()
		if len(id) != 28 || !strings.HasPrefix(id, "w_") || strings.Trim(id[2:], idAlphabet) != "" {
			t.Fatalf("ID %q is not w_ and 26 base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("ID %q given twice", id)
		}
		seen[id] = true
	}
	first := NewWorkID()
	start := time.Now().UnixMilli()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().UnixMilli() == start && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if later := NewWorkID(); later <= first {
		t.Errorf("an ID given a millisecond later (%s) sorts before %s", later, first)
	}
}

func TestWorkSurvivesReopenWithItsIndexes(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := accept(t, db, root("s1", "e1"), Limits{})
	w := Work{ID: "w_r", Scope: "s1", Kind: "manual", State: WorkPending, Keys: []string{"k"}, Inputs: []string{ev.ID},
		Display: &protocol.Display{Title: "Fix the build", Ref: "#12", Links: []protocol.Link{{Label: "PR", URL: "https://example.com/pr/12"}}},
		Created: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}
	putWork(t, db, w)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wantIndexes(t, db, w)
	view(t, db, func(r *Reader) error {
		got, found, err := r.WorkByKey("s1", "k")
		if err != nil || !found || got.Display == nil || got.Display.Links[0].URL != w.Display.Links[0].URL || !got.Created.Equal(w.Created) {
			t.Errorf("after reopen: %+v %v %v", got, found, err)
		}
		return err
	})
}
