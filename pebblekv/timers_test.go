package pebblekv

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// timerDue is a timer of owner "schedule" named id, due at due, in scope s1.
func timerDue(id string, due time.Time) Timer {
	return Timer{ID: TimerID("schedule", id), Owner: "schedule", Scope: "s1", Due: due, Family: "schedule.fired",
		Payload: protocol.Payload{Schema: "schedule.fired.v1", Data: []byte(`{"job":"` + id + `"}`)}}
}

func putTimers(t *testing.T, db *DB, ts ...Timer) {
	t.Helper()
	update(t, db, func(tx *Tx) error {
		for _, tm := range ts {
			if err := tx.PutTimer(tm); err != nil {
				return err
			}
		}
		return nil
	})
}

func dueIDs(t *testing.T, db *DB, now time.Time, limit int) []string {
	t.Helper()
	var ids []string
	view(t, db, func(r *Reader) error {
		ts, err := r.DueTimers(now, limit)
		for _, tm := range ts {
			ids = append(ids, tm.ID)
		}
		return err
	})
	return ids
}

// dueIndex is the due-time index as (time, ID) strings, in key order.
func dueIndex(t *testing.T, db *DB) []string {
	t.Helper()
	var out []string
	for _, k := range rawKeys(t, db, famTimerDue) {
		out = append(out, readTime(k[1:]).Format(time.RFC3339Nano)+" "+string(k[1+timeLen:]))
	}
	return out
}

func TestDueTimersNeverReturnsATimerNotYetDue(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 500, time.UTC)
	db := openDB(t, nil)
	// Written out of order, in another zone, so only the index orders them.
	putTimers(t, db,
		timerDue("later", now.Add(time.Hour)),
		timerDue("now", now.In(time.FixedZone("x", 3600))),
		timerDue("nano-late", now.Add(time.Nanosecond)),
		timerDue("hour-ago", now.Add(-time.Hour)),
		timerDue("1960", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)),
		timerDue("nano-early", now.Add(-time.Nanosecond)),
	)
	for _, tc := range []struct {
		name  string
		now   time.Time
		limit int
		want  []string
	}{
		{"due at or before now, earliest first", now, 0,
			[]string{"schedule/1960", "schedule/hour-ago", "schedule/nano-early", "schedule/now"}},
		{"one nanosecond earlier leaves the timer due now out", now.Add(-time.Nanosecond), 0,
			[]string{"schedule/1960", "schedule/hour-ago", "schedule/nano-early"}},
		{"a limit takes the earliest", now, 2, []string{"schedule/1960", "schedule/hour-ago"}},
		{"before every timer, none", time.Date(1959, 1, 1, 0, 0, 0, 0, time.UTC), 0, nil},
		{"after every timer, all", now.Add(2 * time.Hour), 0,
			[]string{"schedule/1960", "schedule/hour-ago", "schedule/nano-early", "schedule/now", "schedule/nano-late", "schedule/later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dueIDs(t, db, tc.now, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("DueTimers = %q, want %q", got, tc.want)
			}
		})
	}
	view(t, db, func(r *Reader) error {
		due, ok, err := r.NextDue()
		if err != nil || !ok || !due.Equal(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("NextDue = %v %v %v, want 1960", due, ok, err)
		}
		return err
	})
}

func TestPutAndDeleteTimerKeepTheDueIndexExact(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// change runs after timers a (due t0) and b (due t0+1h) were put.
		change    func(tx *Tx) error
		wantIndex []string
		wantNext  time.Time // zero: none armed
	}{
		{"rearming moves the timer's entry to its new due time",
			func(tx *Tx) error { tm := timerDue("a", t0.Add(2*time.Hour)); tm.Fired = 1; return tx.PutTimer(tm) },
			[]string{"2026-07-01T13:00:00Z schedule/b", "2026-07-01T14:00:00Z schedule/a"}, t0.Add(time.Hour)},
		{"a deleted timer leaves no index entry",
			func(tx *Tx) error { _, err := tx.DeleteTimer("schedule/a"); return err },
			[]string{"2026-07-01T13:00:00Z schedule/b"}, t0.Add(time.Hour)},
		{"deleting every timer empties the index",
			func(tx *Tx) error {
				for _, id := range []string{"schedule/a", "schedule/b"} {
					if found, err := tx.DeleteTimer(id); err != nil || !found {
						return errors.Join(err, errors.New("not found: "+id))
					}
				}
				return nil
			},
			nil, time.Time{}},
		{"deleting an absent timer writes nothing",
			func(tx *Tx) error {
				if found, err := tx.DeleteTimer("schedule/none"); err != nil || found {
					return errors.Join(err, errors.New("found an absent timer"))
				}
				return nil
			},
			[]string{"2026-07-01T12:00:00Z schedule/a", "2026-07-01T13:00:00Z schedule/b"}, t0},
		{"putting the same timer again keeps one entry",
			func(tx *Tx) error { return tx.PutTimer(timerDue("a", t0)) },
			[]string{"2026-07-01T12:00:00Z schedule/a", "2026-07-01T13:00:00Z schedule/b"}, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			putTimers(t, db, timerDue("a", t0), timerDue("b", t0.Add(time.Hour)))
			update(t, db, tc.change)
			if got := dueIndex(t, db); !slices.Equal(got, tc.wantIndex) {
				t.Errorf("due index = %q, want %q", got, tc.wantIndex)
			}
			if got := len(rawKeys(t, db, famTimerRec)); got != len(tc.wantIndex) {
				t.Errorf("%d timer records, want %d", got, len(tc.wantIndex))
			}
			view(t, db, func(r *Reader) error {
				next, ok, err := r.NextDue()
				if ok != !tc.wantNext.IsZero() || !next.Equal(tc.wantNext) {
					t.Errorf("NextDue = %v %v, want %v", next, ok, tc.wantNext)
				}
				// Every timer due by the last entry is read back whole.
				ts, err2 := r.DueTimers(t0.Add(3*time.Hour), 0)
				if len(ts) != len(tc.wantIndex) {
					t.Errorf("DueTimers read %d timers, want %d", len(ts), len(tc.wantIndex))
				}
				return errors.Join(err, err2)
			})
		})
	}
}

func TestPutTimerRefusalWritesNothing(t *testing.T) {
	due := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	with := func(f func(tm *Timer)) Timer { tm := timerDue("j", due); f(&tm); return tm }
	for _, tc := range []struct {
		name  string
		timer Timer
		want  error
	}{
		{"no owner", with(func(tm *Timer) { tm.Owner = "" }), protocol.ErrInvalid},
		{"an ID of another owner", with(func(tm *Timer) { tm.ID = "webhook/j" }), protocol.ErrInvalid},
		{"an ID of the owner alone", with(func(tm *Timer) { tm.ID = "schedule/" }), protocol.ErrInvalid},
		{"no family", with(func(tm *Timer) { tm.Family = "" }), protocol.ErrInvalid},
		{"no due time", with(func(tm *Timer) { tm.Due = time.Time{} }), protocol.ErrInvalid},
		{"a recurrence without a kind", with(func(tm *Timer) { tm.Recurrence = &protocol.RecurrenceRule{Rule: []byte(`"* * * * *"`)} }), protocol.ErrInvalid},
		{"payload data that is not JSON", with(func(tm *Timer) { tm.Payload.Data = []byte(`{`) }), protocol.ErrInvalid},
		{"a payload past the page budget", with(func(tm *Timer) {
			tm.Payload.Data = []byte(`"` + strings.Repeat("p", protocol.MaxPageBytes) + `"`)
		}), protocol.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			var err error
			update(t, db, func(tx *Tx) error {
				err = tx.PutTimer(tc.timer)
				return nil
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("PutTimer: %v, want %v", err, tc.want)
			}
			if n := len(rawKeys(t, db, famTimerRec)) + len(rawKeys(t, db, famTimerDue)); n != 0 {
				t.Errorf("a refused PutTimer wrote %d keys", n)
			}
		})
	}
	// Negative control: the same timer, well formed, is written.
	db := openDB(t, nil)
	rec := timerDue("j", due)
	rec.Recurrence = &protocol.RecurrenceRule{Kind: "cron", Rule: []byte(`"* * * * *"`)}
	putTimers(t, db, rec)
	view(t, db, func(r *Reader) error {
		got, found, err := r.Timer("schedule/j")
		if err != nil || !found || got.Recurrence == nil || got.Recurrence.Kind != "cron" || !got.Due.Equal(due) {
			t.Errorf("Timer = %+v %v %v", got, found, err)
		}
		return err
	})
}

func TestTimersPageByOwnerScopeCountAndBytes(t *testing.T) {
	const mib = 1 << 20
	due := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	db := openDB(t, nil)
	var ts []Timer
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		tm := timerDue(id, due)
		tm.Payload.Data = []byte(`"` + strings.Repeat("p", mib) + `"`)
		ts = append(ts, tm)
	}
	other := timerDue("x", due)
	other.Owner, other.ID, other.Scope = "sched", TimerID("sched", "x"), "s2"
	s2 := timerDue("f", due)
	s2.Scope = "s2"
	putTimers(t, db, append(ts, other, s2)...)
	for _, tc := range []struct {
		name      string
		q         TimerQuery
		want      []string
		wantPages []int
	}{
		{"one owner, by bytes", TimerQuery{Owner: "schedule"},
			[]string{"schedule/a", "schedule/b", "schedule/c", "schedule/d", "schedule/e", "schedule/f"}, []int{3, 3}},
		{"an owner whose name the other's begins with is not mixed in", TimerQuery{Owner: "sched"}, []string{"sched/x"}, []int{1}},
		{"by scope", TimerQuery{Scope: "s2", Limit: 1}, []string{"sched/x", "schedule/f"}, []int{1, 1}},
		{"everything, by count", TimerQuery{Limit: 2},
			[]string{"sched/x", "schedule/a", "schedule/b", "schedule/c", "schedule/d", "schedule/e", "schedule/f"}, []int{2, 2, 2, 1}},
		{"an owner after a cursor of another owner", TimerQuery{Owner: "schedule", After: "sched/x", Limit: 10},
			[]string{"schedule/a", "schedule/b", "schedule/c", "schedule/d", "schedule/e", "schedule/f"}, []int{3, 3}},
		{"an owner after a cursor past its timers", TimerQuery{Owner: "sched", After: "schedule/a"}, nil, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var pages []int
			q := tc.q
			for range 20 {
				var page []Timer
				var more bool
				view(t, db, func(r *Reader) error {
					var err error
					page, more, err = r.Timers(q)
					return err
				})
				size := 0
				for _, tm := range page {
					got = append(got, tm.ID)
					size += len(tm.Payload.Data)
				}
				if len(page) > 1 && size > protocol.MaxPageBytes {
					t.Errorf("a page of %d timers holds %d payload bytes", len(page), size)
				}
				pages = append(pages, len(page))
				if !more {
					break
				}
				q.After = page[len(page)-1].ID
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(pages, tc.wantPages) {
				t.Errorf("Timers = %q in pages %v, want %q in %v", got, pages, tc.want, tc.wantPages)
			}
		})
	}
}
