package pebblekv

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// acceptN accepts n root Events of scope, delivery IDs prefix-0 … prefix-(n-1),
// in one Update, and returns their IDs in order.
func acceptN(t testing.TB, db *DB, scope, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	update(t, db, func(tx *Tx) error {
		for i := range n {
			ev, _, err := tx.Accept(root(scope, fmt.Sprintf("%s-%d", prefix, i)), Limits{})
			if err != nil {
				return err
			}
			ids = append(ids, ev.ID)
		}
		return nil
	})
	return ids
}

// addInputs routes ids to the Work in order, batch of them an Update.
func addInputs(t testing.TB, db *DB, workID string, ids []string, batch int) {
	t.Helper()
	for len(ids) > 0 {
		chunk := ids[:min(batch, len(ids))]
		ids = ids[len(chunk):]
		update(t, db, func(tx *Tx) error {
			for _, id := range chunk {
				if _, err := tx.AddWorkInput(workID, id); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// readWork reads one Work that must exist.
func readWork(t testing.TB, db *DB, id string) Work {
	t.Helper()
	var w Work
	view(t, db, func(r *Reader) error {
		var found bool
		var err error
		if w, found, err = r.Work(id); err == nil && !found {
			err = fmt.Errorf("Work %s is gone", id)
		}
		return err
	})
	return w
}

// allInputs pages a Work's inputs limit at a time and returns them with the
// size of each page, checking the numbers run on from 1.
func allInputs(t testing.TB, db *DB, workID string, limit int) (ids []string, pages []int) {
	t.Helper()
	var after uint64
	for range 10_000 {
		var page []WorkInput
		var more bool
		view(t, db, func(r *Reader) error {
			var err error
			page, more, err = r.WorkInputs(workID, after, limit)
			return err
		})
		for _, in := range page {
			if in.N != after+1 {
				t.Fatalf("input %s is numbered %d after %d", in.Event, in.N, after)
			}
			ids, after = append(ids, in.Event), in.N
		}
		pages = append(pages, len(page))
		if !more {
			return ids, pages
		}
		if len(page) == 0 {
			t.Fatal("an empty page said more")
		}
	}
	t.Fatal("paging did not end")
	return nil, nil
}

// storedRecord is a Work's record as the store holds it.
func storedRecord(t testing.TB, db *DB, id string) (raw []byte, inputs int) {
	t.Helper()
	view(t, db, func(r *Reader) error {
		var err error
		raw, _, err = r.get(workRecKey(id))
		return err
	})
	var rec struct {
		Inputs []string `json:"inputs"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return raw, len(rec.Inputs)
}

func TestWorkRecordKeepsABoundedTailAndTheIndexPagesEveryInput(t *testing.T) {
	const total = 2*WorkTail + 9
	db := openDB(t, nil)
	ids := acceptN(t, db, "s1", "in", total)
	other := acceptN(t, db, "s1", "other", 3)
	w := Work{ID: "w_long", Scope: "s1", Kind: "standing", State: WorkPending, Inputs: ids[:1], Trigger: ids[0]}
	putWork(t, db, w)
	putWork(t, db, Work{ID: "w_other", Scope: "s1", Kind: "standing", State: WorkPending, Inputs: other})

	addInputs(t, db, w.ID, ids[1:WorkTail], 7)
	rawAtTail, n := storedRecord(t, db, w.ID)
	if n != WorkTail {
		t.Fatalf("the record lists %d inputs at %d, want all of them", n, WorkTail)
	}
	addInputs(t, db, w.ID, ids[WorkTail:], 7)

	got := readWork(t, db, w.ID)
	if got.InputCount != total || !slices.Equal(got.Inputs, ids[total-WorkTail:]) || got.Trigger != ids[0] {
		t.Errorf("Work reads count %d and inputs %q; want %d and the last %d", got.InputCount, got.Inputs, total, WorkTail)
	}
	raw, n := storedRecord(t, db, w.ID)
	if n != WorkTail || len(raw) > len(rawAtTail)+16 {
		t.Errorf("the record grew: %d inputs, %d bytes (it was %d at %d inputs)", n, len(raw), len(rawAtTail), WorkTail)
	}
	for _, tc := range []struct {
		name      string
		work      string
		limit     int
		want      []string
		wantPages []int
	}{
		{"pages of 50", w.ID, 50, ids, []int{50, 50, 37}},
		{"one page", w.ID, 0, ids, []int{total}},
		// Negative control: another Work's inputs are its own.
		{"another Work", "w_other", 2, other, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := allInputs(t, db, tc.work, tc.limit)
			if !slices.Equal(got, tc.want) || !slices.Equal(pages, tc.wantPages) {
				t.Errorf("inputs %d in pages %v, want %d in %v", len(got), pages, len(tc.want), tc.wantPages)
			}
		})
	}
	view(t, db, func(r *Reader) error {
		if page, more, err := r.WorkInputs(w.ID, total, 10); err != nil || len(page) != 0 || more {
			t.Errorf("past the last input: %v more=%v %v", page, more, err)
		}
		if _, _, err := r.WorkInputs("w_missing", 0, 10); !errors.Is(err, protocol.ErrNotFound) {
			t.Errorf("inputs of a missing Work: %v", err)
		}
		// The Work's Events are linked as before.
		evs, err := r.WorkEvents(w.ID, 0, 0)
		if err == nil && len(evs) != total {
			t.Errorf("%d Events linked to the Work, want %d", len(evs), total)
		}
		return err
	})
}

func TestWorkInputAlreadyRoutedIsFoundByAPointRead(t *testing.T) {
	db := openDB(t, nil)
	ids := acceptN(t, db, "s1", "in", WorkTail+5)
	w := Work{ID: "w_dup", Scope: "s1", Kind: "standing", State: WorkPending, Inputs: ids[:1]}
	putWork(t, db, w)
	addInputs(t, db, w.ID, ids[1:], 100)
	// An Event that names the Work when accepted is linked to it without
	// being one of its inputs.
	var naming Event
	update(t, db, func(tx *Tx) error {
		in := root("s1", "naming")
		in.Works = []string{w.ID}
		var err error
		naming, _, err = tx.Accept(in, Limits{})
		return err
	})
	before := readWork(t, db, w.ID)
	if slices.Contains(before.Inputs, ids[0]) {
		t.Fatalf("the first input is still in the tail; the test needs it out")
	}
	for _, tc := range []struct {
		name  string
		event string
		want  bool
	}{
		{"the first input, out of the tail", ids[0], true},
		{"the latest input", ids[len(ids)-1], true},
		{"an Event never routed to it", acceptN(t, db, "s1", "never", 1)[0], false},
		{"an Event that names the Work", naming.ID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view(t, db, func(r *Reader) error {
				got, err := r.HasWorkInput(w.ID, tc.event)
				if got != tc.want {
					t.Errorf("HasWorkInput = %v, want %v", got, tc.want)
				}
				return err
			})
		})
	}

	// Routing the first input again changes nothing.
	update(t, db, func(tx *Tx) error {
		got, err := tx.AddWorkInput(w.ID, ids[0])
		if got.InputCount != len(ids) {
			t.Errorf("AddWorkInput of an input again: count %d, want %d", got.InputCount, len(ids))
		}
		return err
	})
	// PutWork naming it as a new input is refused, and writes nothing.
	again := before
	again.Inputs = append(slices.Clone(again.Inputs), ids[0])
	err := db.Update(func(tx *Tx) error { return tx.PutWork(again) })
	if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("PutWork with an input it already has: %v", err)
	}
	// Negative control: the Event that only names the Work joins it.
	update(t, db, func(tx *Tx) error {
		got, err := tx.AddWorkInput(w.ID, naming.ID)
		if got.InputCount != len(ids)+1 || got.Inputs[len(got.Inputs)-1] != naming.ID {
			t.Errorf("after routing the naming Event: count %d, tail ends %q", got.InputCount, got.Inputs[len(got.Inputs)-1])
		}
		return err
	})
	if after := readWork(t, db, w.ID); after.InputCount != len(ids)+1 || len(after.Inputs) != WorkTail {
		t.Errorf("Work counts %d inputs with %d in its tail", after.InputCount, len(after.Inputs))
	}
}

// oldLayoutWork writes w as a daemon before the input index did: every
// input in the record, no count, no input index, each input linked.
func oldLayoutWork(t testing.TB, db *DB, w Work) {
	t.Helper()
	raw, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "input_count") {
		t.Fatalf("an old record has no input_count: %s", raw)
	}
	update(t, db, func(tx *Tx) error {
		if err := tx.writeWork(w, Work{}, false, raw); err != nil {
			return err
		}
		for _, id := range w.Inputs {
			if err := tx.LinkWork(id, w.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestOldLayoutWorkReadsAndMovesIntoTheIndexOnItsFirstWrite(t *testing.T) {
	const n = WorkTail + 36
	db := openDB(t, nil)
	ids := acceptN(t, db, "s1", "old", n+2)
	old, next := ids[:n], ids[n:]
	w := Work{ID: "w_old", Scope: "s1", Kind: "standing", State: WorkPending, Keys: []string{"k"}, Inputs: old, Trigger: old[0]}
	oldLayoutWork(t, db, w)

	// It reads as today's layout would, before anything writes it.
	if got := readWork(t, db, w.ID); got.InputCount != n || !slices.Equal(got.Inputs, old[n-WorkTail:]) || got.Trigger != old[0] {
		t.Errorf("the old record reads count %d, %d inputs, trigger %q", got.InputCount, len(got.Inputs), got.Trigger)
	}
	if got, _ := allInputs(t, db, w.ID, 30); !slices.Equal(got, old) {
		t.Errorf("the old record's inputs page as %d, want its %d", len(got), n)
	}
	if keys := rawKeys(t, db, famWorkInput); len(keys) != 0 {
		t.Fatalf("reading wrote %d input index entries", len(keys))
	}
	view(t, db, func(r *Reader) error {
		ws, _, err := r.Works(WorkQuery{Scope: "s1"})
		if err == nil && (len(ws) != 1 || ws[0].InputCount != n || len(ws[0].Inputs) != WorkTail) {
			t.Errorf("Works lists the old record as %+v", ws)
		}
		return err
	})

	// Its first write moves every input into the index.
	addInputs(t, db, w.ID, next[:1], 1)
	if _, stored := storedRecord(t, db, w.ID); stored != WorkTail {
		t.Errorf("after its first write the record lists %d inputs, want %d", stored, WorkTail)
	}
	if got := len(rawKeys(t, db, famWorkInput)); got != n+1 {
		t.Errorf("%d input index entries, want %d", got, n+1)
	}
	if got, _ := allInputs(t, db, w.ID, 30); !slices.Equal(got, ids[:n+1]) {
		t.Errorf("after the move the inputs page as %d, want %d in order", len(got), n+1)
	}
	// An input of the old list is known by the point read: routing it
	// again is nothing, and a later one is numbered after the moved ones.
	update(t, db, func(tx *Tx) error {
		if has, err := tx.hasIndexedInput(w.ID, old[0]); err != nil || !has {
			t.Errorf("the first old input is not in the index: %v", err)
		}
		if _, err := tx.AddWorkInput(w.ID, old[0]); err != nil {
			return err
		}
		_, err := tx.AddWorkInput(w.ID, next[1])
		return err
	})
	got := readWork(t, db, w.ID)
	if got.InputCount != n+2 || got.Inputs[len(got.Inputs)-1] != next[1] || got.Trigger != old[0] {
		t.Errorf("after two more: count %d, last %q, trigger %q", got.InputCount, got.Inputs[len(got.Inputs)-1], got.Trigger)
	}
	if all, _ := allInputs(t, db, w.ID, 0); !slices.Equal(all, ids) {
		t.Errorf("inputs %d, want %d in order", len(all), len(ids))
	}
	wantIndexes(t, db, got)
}

func TestOldLayoutWorkRefusesDroppingOrRepeatingAnOldInput(t *testing.T) {
	db := openDB(t, nil)
	ids := acceptN(t, db, "s1", "old", WorkTail+10)
	w := Work{ID: "w_old", Scope: "s1", Kind: "standing", State: WorkPending, Inputs: ids[:WorkTail+9]}
	oldLayoutWork(t, db, w)
	read := readWork(t, db, w.ID)
	for _, tc := range []struct {
		name   string
		inputs []string
		want   error
	}{
		{"an input out of the tail again", append(slices.Clone(read.Inputs), ids[0]), protocol.ErrInvalid},
		{"the tail cut short", read.Inputs[1:], protocol.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			put := read
			put.Inputs = tc.inputs
			if err := db.Update(func(tx *Tx) error { return tx.PutWork(put) }); !errors.Is(err, tc.want) {
				t.Errorf("PutWork: %v, want %v", err, tc.want)
			}
			if keys := rawKeys(t, db, famWorkInput); len(keys) != 0 {
				t.Errorf("a refused PutWork moved %d inputs", len(keys))
			}
		})
	}
	// Negative control: the Work as read, with a new input, is written.
	ok := read
	ok.Inputs = append(slices.Clone(read.Inputs), ids[WorkTail+9])
	putWork(t, db, ok)
	if got := readWork(t, db, w.ID); got.InputCount != WorkTail+10 {
		t.Errorf("count %d after a new input", got.InputCount)
	}
}

// errRollback ends a benchmark's Update without committing it.
var errRollback = errors.New("rolled back")

// BenchmarkAddWorkInput routes one more Event to a Work that has n-1
// inputs: accepting the Event and AddWorkInput in one transaction, rolled
// back, so every op adds the nth input. The cost must not grow with n.
func BenchmarkAddWorkInput(b *testing.B) {
	sizes := []int{10, 100, 10_000}
	if testing.Short() {
		sizes = []int{10, 1_000}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("input_%d", n), func(b *testing.B) {
			db := openDB(b, &Options{NoSync: true})
			ids := acceptN(b, db, "s1", "in", n-1)
			putWork(b, db, Work{ID: "w_b", Scope: "s1", Kind: "standing", State: WorkPending, Inputs: ids[:1], Trigger: ids[0]})
			addInputs(b, db, "w_b", ids[1:], 1000)
			for i := 0; b.Loop(); i++ {
				err := db.Update(func(tx *Tx) error {
					ev, _, err := tx.Accept(root("s1", fmt.Sprint("next-", i)), Limits{})
					if err != nil {
						return err
					}
					w, err := tx.AddWorkInput("w_b", ev.ID)
					if err != nil {
						return err
					}
					if w.InputCount != n {
						return fmt.Errorf("the Work counts %d inputs, want %d", w.InputCount, n)
					}
					return errRollback
				})
				if !errors.Is(err, errRollback) {
					b.Fatal(err)
				}
			}
		})
	}
}
