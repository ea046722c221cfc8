package pebblekv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// active is an active Wait of work, due at due (zero: no timeout).
func active(id, work string, due time.Time) Wait {
	return Wait{ID: id, Work: work, Scope: "s1", Execution: "x_" + work, Description: "waiting for review",
		Due: due, State: WaitActive, Created: t0, Updated: t0}
}

// ended is w woken (or cancelled, by state).
func ended(w Wait, state string) Wait {
	w.State = state
	if state == WaitWoken {
		w.Wake = &protocol.Wake{Wait: w.ID, Reason: protocol.WakeTimeout, At: t0}
	}
	return w
}

func putWaits(t *testing.T, db *DB, ws ...Wait) {
	t.Helper()
	update(t, db, func(tx *Tx) error {
		for _, w := range ws {
			if err := tx.PutWait(w); err != nil {
				return err
			}
		}
		return nil
	})
}

// activeOf is the ID of work's active Wait, "" for none.
func activeOf(t *testing.T, db *DB, work string) string {
	t.Helper()
	var id string
	view(t, db, func(r *Reader) error {
		w, found, err := r.ActiveWait(work)
		if found {
			id = w.ID
		}
		return err
	})
	return id
}

func TestPutWaitSecondActiveOfAWorkIsConflict(t *testing.T) {
	a := active("wt_a", "w1", time.Time{})
	for _, tc := range []struct {
		name       string
		stored     []Wait
		put        Wait
		conflict   bool
		wantActive string // w1's active Wait after the put
	}{
		{"a second active Wait of the Work is a conflict", []Wait{a}, active("wt_b", "w1", time.Time{}), true, "wt_a"},
		{"a woken Wait frees the slot", []Wait{a, ended(a, WaitWoken)}, active("wt_b", "w1", time.Time{}), false, "wt_b"},
		{"a cancelled Wait frees the slot", []Wait{a, ended(a, WaitCancelled)}, active("wt_b", "w1", time.Time{}), false, "wt_b"},
		{"rewriting the active Wait itself is no conflict", []Wait{a}, active("wt_a", "w1", t0), false, "wt_a"},
		{"another Work's active Wait takes no slot of w1", []Wait{active("wt_x", "w1x", time.Time{})}, a, false, "wt_a"},
		{"a second Wait that is not active needs no slot", []Wait{a}, ended(active("wt_b", "w1", time.Time{}), WaitCancelled), false, "wt_a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			for _, w := range tc.stored {
				putWaits(t, db, w)
			}
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutWait(tc.put); return nil })
			if tc.conflict {
				wantCode(t, err, protocol.ErrConflict)
				if !maps.Equal(before, dump(t, db)) {
					t.Error("a refused PutWait changed the store")
				}
			} else if err != nil {
				t.Fatalf("PutWait: %v, want accepted", err)
			}
			if got := activeOf(t, db, "w1"); got != tc.wantActive {
				t.Errorf("ActiveWait(w1) = %q, want %q", got, tc.wantActive)
			}
		})
	}
}

func TestPutWaitRefusesInvalidWaitsAndWritesNothing(t *testing.T) {
	base := active("wt_a", "w1", t0)
	with := func(f func(*Wait)) Wait { w := base; f(&w); return w }
	for _, tc := range []struct {
		name string
		w    Wait
	}{
		{"missing ID", with(func(w *Wait) { w.ID = "" })},
		{"missing Work", with(func(w *Wait) { w.Work = "" })},
		{"missing scope", with(func(w *Wait) { w.Scope = "" })},
		{"unknown state", with(func(w *Wait) { w.State = "sleeping" })},
		{"moved to another Work", with(func(w *Wait) { w.Work = "w2" })},
		{"moved to another scope", with(func(w *Wait) { w.Scope = "s2" })},
		{"a wake Event that is not JSON", with(func(w *Wait) {
			w.Wake = &protocol.Wake{Wait: w.ID, Reason: protocol.WakeEvent,
				Event: &protocol.Event{ID: "e1", Payload: protocol.Payload{Data: jsontext.Value(`{"a":`)}}}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			putWaits(t, db, base)
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutWait(tc.w); return nil })
			wantCode(t, err, protocol.ErrInvalid)
			if !maps.Equal(before, dump(t, db)) {
				t.Error("a refused PutWait changed the store")
			}
		})
	}
}

func TestPutWaitCutsDescriptionAndProgressToOneBoundedLine(t *testing.T) {
	long := strings.Repeat("é", protocol.MaxWaitDescription) // 2 bytes a rune: cut mid-rune unless careful
	for _, tc := range []struct {
		name, desc, progress string
		wantDesc, wantProg   string
	}{
		{"one short line is kept", "waiting for review", "2 of 3 approvals", "waiting for review", "2 of 3 approvals"},
		{"only the first line is kept", "first\nsecond", "a\r\nb", "first", "a"},
		{"a long line is cut on a rune boundary within the bound", long, long,
			long[:protocol.MaxWaitDescription], long[:protocol.MaxWaitProgress]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			w := active("wt_a", "w1", time.Time{})
			w.Description, w.Progress = tc.desc, tc.progress
			putWaits(t, db, w)
			view(t, db, func(r *Reader) error {
				got, _, err := r.Wait("wt_a")
				if got.Description != tc.wantDesc || got.Progress != tc.wantProg {
					t.Errorf("description %q, progress %q; want %q, %q", got.Description, got.Progress, tc.wantDesc, tc.wantProg)
				}
				if !utf8.ValidString(got.Description) || !utf8.ValidString(got.Progress) {
					t.Error("a cut split a rune")
				}
				return err
			})
		})
	}
}

func dueWaitIDs(t *testing.T, db *DB, now time.Time, limit int) []string {
	t.Helper()
	ids := []string{}
	view(t, db, func(r *Reader) error {
		ws, err := r.DueWaits(now, limit)
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		return err
	})
	return ids
}

func nextWaitDue(t *testing.T, db *DB) (time.Time, bool) {
	t.Helper()
	var due time.Time
	var ok bool
	view(t, db, func(r *Reader) error {
		var err error
		due, ok, err = r.NextWaitDue()
		return err
	})
	return due, ok
}

func TestDueWaitsInDueOrderAndOnlyActive(t *testing.T) {
	now := t0.Add(time.Hour)
	zone := time.FixedZone("x", 5*3600)
	ws := []Wait{
		active("wt_later", "w1", now.Add(time.Minute)),
		active("wt_now", "w2", now.In(zone)),
		active("wt_nano_early", "w3", now.Add(-time.Nanosecond)),
		active("wt_1960", "w4", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)),
		active("wt_no_timeout", "w5", time.Time{}),
		ended(active("wt_woken", "w6", now.Add(-time.Hour)), WaitWoken),
		ended(active("wt_cancelled", "w7", now.Add(-2*time.Hour)), WaitCancelled),
	}
	for _, tc := range []struct {
		name  string
		now   time.Time
		limit int
		want  []string
	}{
		{"due at or before now, earliest first, active only", now, 0, []string{"wt_1960", "wt_nano_early", "wt_now"}},
		{"a nanosecond earlier leaves the Wait due now out", now.Add(-time.Nanosecond), 0, []string{"wt_1960", "wt_nano_early"}},
		{"a limit takes the earliest", now, 1, []string{"wt_1960"}},
		{"before every Wait, none", time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC), 0, []string{}},
		{"after every Wait, every active one with a due time", now.Add(24 * time.Hour), 0, []string{"wt_1960", "wt_nano_early", "wt_now", "wt_later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			putWaits(t, db, ws...)
			if got := dueWaitIDs(t, db, tc.now, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("DueWaits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitDueIndexFollowsItsWait(t *testing.T) {
	now := t0.Add(time.Hour)
	a, b := active("wt_a", "w1", now.Add(-time.Minute)), active("wt_b", "w2", now.Add(time.Minute))
	moved := a
	moved.Due = now.Add(time.Hour)
	cleared := a
	cleared.Due = time.Time{}
	for _, tc := range []struct {
		name     string
		puts     []Wait
		wantDue  []string
		wantNext time.Time // zero: none
	}{
		{"the earliest active Wait is next", []Wait{a, b}, []string{"wt_a"}, a.Due},
		{"a Wait moved later is due at its new time only", []Wait{a, b, moved}, []string{}, b.Due},
		{"a Wait whose timeout is cleared is never due", []Wait{a, b, cleared}, []string{}, b.Due},
		{"a woken Wait is neither due nor next", []Wait{a, b, ended(a, WaitWoken)}, []string{}, b.Due},
		{"no active Wait with a due time, no next", []Wait{a, b, ended(a, WaitCancelled), ended(b, WaitWoken)}, []string{}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			for _, w := range tc.puts {
				putWaits(t, db, w)
			}
			if got := dueWaitIDs(t, db, now, 0); !slices.Equal(got, tc.wantDue) {
				t.Errorf("DueWaits = %v, want %v", got, tc.wantDue)
			}
			due, ok := nextWaitDue(t, db)
			if ok != !tc.wantNext.IsZero() || !due.Equal(tc.wantNext) {
				t.Errorf("NextWaitDue = %v, %v; want %v", due, ok, tc.wantNext)
			}
			// One due entry per active Wait with a due time, no more.
			wantEntries := 0
			view(t, db, func(r *Reader) error {
				ws, _, err := r.ActiveWaits("", 0)
				for _, w := range ws {
					if !w.Due.IsZero() {
						wantEntries++
					}
				}
				return err
			})
			if got := len(rawKeys(t, db, famWaitDue)); got != wantEntries {
				t.Errorf("due index has %d entries, want %d", got, wantEntries)
			}
		})
	}
}

// pages reads every page of ActiveWaits of limit, each as its Wait IDs.
func pages(t *testing.T, db *DB, limit int) [][]string {
	t.Helper()
	var out [][]string
	after := ""
	for range 100 {
		var page []string
		var more bool
		view(t, db, func(r *Reader) error {
			ws, m, err := r.ActiveWaits(after, limit)
			for _, w := range ws {
				page = append(page, w.ID)
			}
			more = m
			return err
		})
		out = append(out, page)
		if !more {
			return out
		}
		after = page[len(page)-1]
	}
	t.Fatal("ActiveWaits never ended")
	return nil
}

func TestActiveWaitsPagesByCount(t *testing.T) {
	db := openDB(t, nil)
	// Works w1..w5 wait; w3's Wait ended, so it is on no page.
	for i := 1; i <= 5; i++ {
		putWaits(t, db, active(fmt.Sprintf("wt_%d", i), fmt.Sprintf("w%d", i), time.Time{}))
	}
	putWaits(t, db, ended(active("wt_3", "w3", time.Time{}), WaitWoken))
	for _, tc := range []struct {
		name  string
		limit int
		want  [][]string
	}{
		{"pages of two", 2, [][]string{{"wt_1", "wt_2"}, {"wt_4", "wt_5"}}},
		{"pages of three", 3, [][]string{{"wt_1", "wt_2", "wt_4"}, {"wt_5"}}},
		{"a limit of 0 is the largest page", 0, [][]string{{"wt_1", "wt_2", "wt_4", "wt_5"}}},
		{"a page exactly as long as the rest says no more", 4, [][]string{{"wt_1", "wt_2", "wt_4", "wt_5"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pages(t, db, tc.limit); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("pages = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestActiveWaitsPagesAfterAWaitThatEndedOrIsUnknown(t *testing.T) {
	db := openDB(t, nil)
	for i := 1; i <= 3; i++ {
		putWaits(t, db, active(fmt.Sprintf("wt_%d", i), fmt.Sprintf("w%d", i), time.Time{}))
	}
	// The page before ended at wt_2, which has woken since.
	putWaits(t, db, ended(active("wt_2", "w2", time.Time{}), WaitWoken))
	view(t, db, func(r *Reader) error {
		ws, more, err := r.ActiveWaits("wt_2", 10)
		if err != nil || len(ws) != 1 || ws[0].ID != "wt_3" || more {
			t.Errorf("after the woken wt_2: %v, more %v, err %v; want [wt_3]", ws, more, err)
		}
		_, _, err = r.ActiveWaits("wt_unknown", 10)
		wantCode(t, err, protocol.ErrInvalid)
		return nil
	})
}

func TestActiveWaitsPageStopsAtTheByteBudget(t *testing.T) {
	big := jsontext.Value(`"` + strings.Repeat("d", protocol.MaxPageBytes/3+1024) + `"`)
	for _, tc := range []struct {
		name string
		data jsontext.Value
		want [][]string
	}{
		// A third of the budget and a little: two fit a page, three do not.
		{"large Waits page by bytes", big, [][]string{{"wt_1", "wt_2"}, {"wt_3", "wt_4"}}},
		{"small Waits page by count alone", jsontext.Value(`"d"`), [][]string{{"wt_1", "wt_2", "wt_3", "wt_4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			for i := 1; i <= 4; i++ {
				w := active(fmt.Sprintf("wt_%d", i), fmt.Sprintf("w%d", i), time.Time{})
				w.Wake = &protocol.Wake{Wait: w.ID, Reason: protocol.WakeEvent, Event: &protocol.Event{ID: "e", Payload: protocol.Payload{Data: tc.data}}}
				putWaits(t, db, w)
			}
			if got := pages(t, db, 0); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("pages = %v, want %v", got, tc.want)
			}
		})
	}
}
