package pebblekv

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

func TestRouteDecisionIsReplacedAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	failed := RouteDecision{Event: "ev_1", Scope: "s1", State: RouteFailed, Attempts: 1, Updated: at,
		Reasons: []RouteReason{{Route: 0, Handler: "webhook.route", Error: "route.match timed out"}}}
	routed := RouteDecision{Event: "ev_1", Scope: "s1", State: RouteRouted, Work: "w_1", Created: true, Route: 1, Attempts: 2,
		Updated: at.Add(time.Minute), DisplayRefused: "display title is 300 bytes; keep it within 200",
		Reasons: []RouteReason{{Route: 0, Handler: "manual", Reason: "manual matches only manual.request Events"}, {Route: 1, Handler: "webhook.route", Match: true}}}
	update(t, db, func(tx *Tx) error { return tx.PutRouteDecision(failed) })
	update(t, db, func(tx *Tx) error {
		if err := tx.PutRouteDecision(routed); err != nil {
			return err
		}
		return tx.SetRouteCursor(42)
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	view(t, db, func(r *Reader) error {
		got, found, err := r.RouteDecision("ev_1")
		if err != nil || !found || got.State != RouteRouted || got.Work != "w_1" || got.Attempts != 2 ||
			!slices.Equal(got.Reasons, routed.Reasons) || got.DisplayRefused != routed.DisplayRefused || !got.Updated.Equal(routed.Updated) {
			t.Errorf("RouteDecision = %+v %v %v, want %+v", got, found, err, routed)
		}
		if _, found, _ := r.RouteDecision("ev_2"); found {
			t.Error("a decision for an Event never routed")
		}
		if seq, err := r.RouteCursor(); err != nil || seq != 42 {
			t.Errorf("RouteCursor = %d %v, want 42", seq, err)
		}
		return nil
	})
}

func TestPutRouteDecisionRefusesAMalformedOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    RouteDecision
	}{
		{"no event", RouteDecision{Scope: "s1", State: RouteRouted}},
		{"unknown state", RouteDecision{Event: "ev_1", Scope: "s1", State: "matched"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutRouteDecision(tc.d); return nil })
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Errorf("PutRouteDecision: %v, want invalid", err)
			}
			if n := len(rawKeys(t, db, famRouteRec)); n != 0 {
				t.Errorf("a refused decision wrote %d keys", n)
			}
		})
	}
}

func TestRouteCursorIsZeroUntilSet(t *testing.T) {
	db := openDB(t, nil)
	accept(t, db, root("s1", "d1"), Limits{})
	view(t, db, func(r *Reader) error {
		// The log's sequence is not the router's cursor.
		if seq, err := r.RouteCursor(); err != nil || seq != 0 {
			t.Errorf("RouteCursor = %d %v, want 0", seq, err)
		}
		return nil
	})
}

func TestPendingRoutesListByScopeThenSequence(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		for _, p := range []PendingRoute{{"b", 3}, {"ab", 1}, {"a", 5}, {"a", 256}, {"a", 2}, {"b", 1}, {"a", 5}} {
			if err := tx.AddPendingRoute(p.Scope, p.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx *Tx) error {
		if err := tx.DeletePendingRoute("a", 5); err != nil {
			return err
		}
		return tx.DeletePendingRoute("a", 99) // absent: not an error
	})
	for _, tc := range []struct {
		name string
		read func(r *Reader) ([]PendingRoute, error)
		want []PendingRoute
	}{
		// Scopes come in the store's order (shorter names first), each
		// scope's entries together and by sequence.
		{"every scope, each by sequence", func(r *Reader) ([]PendingRoute, error) { return r.PendingRoutes(0) },
			[]PendingRoute{{"a", 2}, {"a", 256}, {"b", 1}, {"b", 3}, {"ab", 1}}},
		{"a limit", func(r *Reader) ([]PendingRoute, error) { return r.PendingRoutes(2) },
			[]PendingRoute{{"a", 2}, {"a", 256}}},
		{"one scope, not another whose name it begins", func(r *Reader) ([]PendingRoute, error) { return r.PendingRoutesOf("a", 0) },
			[]PendingRoute{{"a", 2}, {"a", 256}}},
		{"one scope with a limit", func(r *Reader) ([]PendingRoute, error) { return r.PendingRoutesOf("b", 1) },
			[]PendingRoute{{"b", 1}}},
		{"a scope with none", func(r *Reader) ([]PendingRoute, error) { return r.PendingRoutesOf("c", 0) },
			[]PendingRoute{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view(t, db, func(r *Reader) error {
				got, err := tc.read(r)
				if !slices.Equal(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
				return err
			})
		})
	}
	view(t, db, func(r *Reader) error {
		scopes, err := r.PendingScopes()
		if !slices.Equal(scopes, []string{"a", "b", "ab"}) {
			t.Errorf("PendingScopes = %q", scopes)
		}
		return err
	})
}
