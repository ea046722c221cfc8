package daemon_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestWorkListsShowLatestAttemptAndPageNewestFirst: over the real API,
// each listed Work carries its latest attempt and executor (none before
// its first), in both orders and in the detail; order=newest pages by
// descending ID with the scope and state filters, its cursor meaning
// older Work; a cursor at the oldest Work is an empty last page.
func TestWorkListsShowLatestAttemptAndPageNewestFirst(t *testing.T) {
	f := startRunFixture(t)
	ctx := context.Background()
	c := f.e.C
	// IDs that sort after the fixture's time-based one, in this order.
	pending, done, last := "w_zz01", "w_zz02", "w_zz03"
	now := time.Now().UTC().Truncate(time.Millisecond)
	err := f.d.DB().Update(func(tx *pebblekv.Tx) error {
		for _, w := range []pebblekv.Work{
			{ID: pending, Scope: "alpha", Kind: "manual", State: pebblekv.WorkPending, Created: now, Updated: now},
			{ID: done, Scope: "alpha", Kind: "manual", State: pebblekv.WorkCompleted, Created: now, Updated: now},
			{ID: last, Scope: "alpha", Kind: "manual", State: pebblekv.WorkPending, Created: now, Updated: now},
		} {
			if err := tx.PutWork(w); err != nil {
				return err
			}
		}
		return tx.PutExecution(pebblekv.Execution{ID: pebblekv.NewExecutionID(), Work: done, Scope: "alpha", Attempt: 1,
			Package: "probe", Executor: "probe-other", Epoch: 1, State: pebblekv.ExecSettled, Outcome: protocol.OutcomeCompleted, Started: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	attempts := func(ws []client.Work) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.ID+"#"+strings.Repeat("+", w.Attempt)+" "+w.Executor)
		}
		return out
	}
	fix, none, one := f.work+"#++ probe/probe-exec", " ", "#+ probe/probe-other"

	for _, tc := range []struct {
		name string
		q    client.WorkQuery
		want []string
		next string
	}{
		{"oldest first", client.WorkQuery{}, []string{fix, pending + "#" + none, done + one, last + "#" + none}, ""},
		{"newest first, a page", client.WorkQuery{Newest: true, Limit: 2}, []string{last + "#" + none, done + one}, done},
		{"newest first, the next page", client.WorkQuery{Newest: true, Limit: 2, After: done}, []string{pending + "#" + none, fix}, ""},
		{"newest first by state", client.WorkQuery{Newest: true, State: client.WorkPending}, []string{last + "#" + none, pending + "#" + none}, ""},
		{"newest first by scope and state", client.WorkQuery{Newest: true, Scope: "alpha", State: client.WorkCompleted}, []string{done + one}, ""},
		{"newest first after the oldest", client.WorkQuery{Newest: true, After: f.work}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Works(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := attempts(l.Work); !slices.Equal(got, tc.want) || l.Next != tc.next {
				t.Errorf("Works(%+v) = %q next %q, want %q next %q", tc.q, got, l.Next, tc.want, tc.next)
			}
		})
	}

	for id, want := range map[string]string{f.work: fix, done: done + one, pending: pending + "#" + none} {
		d, err := c.WorkDetail(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := attempts([]client.Work{d.Work}); got[0] != want {
			t.Errorf("the detail of %s says %q, want %q", id, got[0], want)
		}
	}
	cancelled, err := c.CancelWork(ctx, pending, "not needed")
	if err != nil || cancelled.Attempt != 0 || cancelled.Executor != "" || cancelled.State != client.WorkCancelled {
		t.Errorf("cancelling Work with no attempt: %+v %v", cancelled, err)
	}

	// The binary's --newest, its next page command keeping the order.
	code, out, errs := cli(t, f.e, "work", "list", "--newest", "--limit", "1")
	if code != 0 || !strings.Contains(out, last) || strings.Contains(out, done) || !strings.Contains(out, "--after "+last) ||
		!strings.Contains(out, "--newest") {
		t.Errorf("work list --newest: %d %s %s", code, out, errs)
	}
}

// TestExtensionsSaySurfacesTheirManifestsProvide: GET /v1/extensions
// summarizes each package's manifest, kind and name in the manifest's
// order.
func TestExtensionsSaySurfacesTheirManifestsProvide(t *testing.T) {
	f := startRunFixture(t)
	x := f.e.Extension("probe")
	want := []string{"connection probe-api", "extension probe", "family probe.seen", "route probe-route", "operation probe.call",
		"operation probe.repeat", "operation probe.write", "operation probe.emit", "task probe-tick", "check probe-ready",
		"schema probe.seen", "render"}
	if !slices.Equal(x.Surfaces, want) {
		t.Errorf("the probe's surfaces are %q, want %q", x.Surfaces, want)
	}
}
