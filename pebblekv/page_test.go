package pebblekv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// pageReader reads the page after the previous one: the sizes of its items
// as an answer counts them, their names, and whether more was said.
type pageReader func(r *Reader, limit int) (sizes []int, names []string, more bool, err error)

// bigEvent is a root Event of scope whose payload is about size bytes,
// linked to work when it is set.
func bigEvent(scope, delivery string, size int, work string) EventInput {
	in := root(scope, delivery)
	in.Payload = protocol.Payload{Data: []byte(`"` + strings.Repeat("p", size) + `"`)}
	if work != "" {
		in.Works = []string{work}
	}
	return in
}

// TestListsPageByBytesAndSayMore: every list reader stops a page at its
// byte budget as well as its count, always answers at least one item, says
// more exactly when another item follows, and together its pages hold every
// item once.
func TestListsPageByBytesAndSayMore(t *testing.T) {
	const mib = 1 << 20
	// Sizes: ten of 1 MiB, one alone over the budget, then small ones.
	sizes := []int{mib, mib, mib, mib, mib, mib, mib, mib, mib, mib, 5 * mib, 10, 10, 10}
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		for i, n := range sizes {
			name := fmt.Sprintf("i%02d", i)
			if err := tx.KVPut("notes", name, make([]byte, n)); err != nil {
				return err
			}
			// Another scope's Event between each of ours, outside the Work.
			if _, _, err := tx.Accept(bigEvent("other", "o"+name, mib, ""), Limits{}); err != nil {
				return err
			}
			if _, _, err := tx.Accept(bigEvent("s1", name, n, "w1"), Limits{}); err != nil {
				return err
			}
		}
		return nil
	})
	kvAfter := ""
	var evAfter uint64
	eventsOf := func(read func(r *Reader, limit int) ([]Event, bool, error)) pageReader {
		return func(r *Reader, limit int) ([]int, []string, bool, error) {
			evs, more, err := read(r, limit)
			var ss []int
			var names []string
			for _, ev := range evs {
				ss = append(ss, ev.Wire().WireSize())
				names = append(names, ev.DeliveryID)
				evAfter = ev.Seq
			}
			return ss, names, more, err
		}
	}
	cases := []struct {
		name  string
		own   int // how many items are the reader's
		read  pageReader
		reset func()
	}{
		{"KVList", len(sizes), func(r *Reader, limit int) ([]int, []string, bool, error) {
			items, more, err := r.KVList("notes", "", kvAfter, limit)
			var ss []int
			var names []string
			for _, it := range items {
				ss = append(ss, protocol.KVItemSize(it.Key, len(it.Value)))
				names = append(names, it.Key)
				kvAfter = it.Key
			}
			return ss, names, more, err
		}, func() { kvAfter = "" }},
		{"ScopeEventsPage", len(sizes), eventsOf(func(r *Reader, limit int) ([]Event, bool, error) {
			return r.ScopeEventsPage([]string{"s1"}, evAfter, limit)
		}), func() { evAfter = 0 }},
		{"WorkEventsPage", len(sizes), eventsOf(func(r *Reader, limit int) ([]Event, bool, error) {
			return r.WorkEventsPage("w1", evAfter, limit)
		}), func() { evAfter = 0 }},
		{"EventsPage", 2 * len(sizes), eventsOf(func(r *Reader, limit int) ([]Event, bool, error) {
			return r.EventsPage(evAfter, limit)
		}), func() { evAfter = 0 }},
	}
	for _, tc := range cases {
		for _, limit := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s limit %d", tc.name, limit), func(t *testing.T) {
				tc.reset()
				seen := map[string]bool{}
				pages := 0
				for {
					var (
						ss    []int
						names []string
						more  bool
					)
					view(t, db, func(r *Reader) error {
						var err error
						ss, names, more, err = tc.read(r, limit)
						return err
					})
					pages++
					total := 0
					for _, s := range ss {
						total += s
					}
					if len(ss) == 0 || len(ss) > 1 && total > protocol.MaxPageBytes || limit > 0 && len(ss) > limit {
						t.Fatalf("page %d: %d items of %d bytes (limit %d, budget %d)", pages, len(ss), total, limit, protocol.MaxPageBytes)
					}
					for _, n := range names {
						if seen[n] {
							t.Fatalf("page %d: %s again", pages, n)
						}
						seen[n] = true
					}
					if !more {
						break
					}
				}
				if len(seen) != tc.own {
					t.Fatalf("the pages held %d items, want %d", len(seen), tc.own)
				}
				if limit == 0 && pages < 4 {
					t.Fatalf("%d pages: the byte budget did not page %d MiB", pages, 20)
				}
			})
		}
	}
}
