package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

func TestWorkListShowsTitleRefOrKindAndAge(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		w    client.Work
		want []string
	}{
		{"a display title", client.Work{ID: "w_a", Scope: "s", Kind: "manual", State: "pending", Created: now.Add(-90 * time.Second),
			Display: &client.Display{Title: "Fix the login", Ref: "#12"}, Inputs: []string{"e1", "e2"}},
			[]string{"w_a", "manual", "pending", "Fix the login", "1m", "2"}},
		{"a ref without title", client.Work{ID: "w_b", Kind: "k", State: "cancelled", Created: now.Add(-3 * time.Hour), Display: &client.Display{Ref: "ENG-7"}},
			[]string{"w_b", "ENG-7", "3h", "0"}},
		{"no display: the kind", client.Work{ID: "w_c", Kind: "schedule.job", State: "pending", Created: now.Add(-72 * time.Hour)},
			[]string{"w_c", "schedule.job  pending  schedule.job", "3d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeWorkList(&b, []client.Work{tc.w}, now); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") {
				t.Fatalf("want a header and a row:\n%s", b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[1], w) {
					t.Errorf("the row lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestWorkShowSaysEverythingAboutTheWork(t *testing.T) {
	d := client.WorkDetail{
		Work: client.Work{ID: "w_a", Scope: "alpha", Kind: "manual", State: "cancelled", Reason: "cancelled by the operator: dup",
			Keys: []string{"k1", "k2"}, Binding: "b1", Grants: []string{"g1"}, Trigger: "e1",
			Display: &client.Display{Title: "T", Ref: "#1", Requester: "ann", Links: []client.Link{{Label: "Issue #1", URL: "https://x/1"}}},
			Inputs:  []string{"e0", "e1"}},
		Inputs: []client.WorkInput{{Event: protocol.Event{ID: "e1", Sequence: 4, Type: "manual.request"},
			Route: &client.RouteDecision{State: "routed", Route: 1, Work: "w_a", Created: true,
				Reasons: []client.RouteReason{{Route: 0, Handler: "h0"}, {Route: 1, Handler: "manual", Match: true}}}}},
		Omitted: 1,
	}
	var b bytes.Buffer
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cancelled (cancelled by the operator: dup)", "k1, k2", "Issue #1 https://x/1", "ann", "b1", "g1",
		"route 1 (manual) created w_a", "manual.request", "2 inputs (last 1 shown; 'open-conduit work inputs w_a' lists them all)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, b.String())
		}
	}
	// Negative control: a Work without a display says so rather than
	// inventing one.
	b.Reset()
	d.Work.Display, d.Inputs, d.Omitted = nil, nil, 0
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gave no display") || strings.Contains(b.String(), "SEQ") {
		t.Errorf("without a display or inputs:\n%s", b.String())
	}
}

func TestWorkShowListsAttemptsAndTheWait(t *testing.T) {
	one := 1
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	d := client.WorkDetail{
		Work: client.Work{ID: "w_a", Scope: "alpha", Kind: "manual", State: "waiting"},
		Executions: []client.Execution{
			{ID: "x_1", Attempt: 1, Package: "shell", Executor: "sh", Epoch: 1, State: "settled", Outcome: "failed", Reason: "exit 1", ExitCode: &one, Started: now, Settled: now},
			{ID: "x_2", Attempt: 2, Package: "shell", Executor: "sh", Epoch: 3, State: "running", Declared: "waiting", DeclaredReason: "CI runs"},
		},
		Wait: &client.Wait{ID: "wt_1", Work: "w_a", Owner: "ci", Description: "CI on PR #4", Progress: "3 of 5 checks", Due: now.Add(2 * time.Hour)},
	}
	var b bytes.Buffer
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attempts  2", "ATTEMPT", "x_1", "shell/sh", "failed (exit 1)", "declared waiting (CI runs)",
		"wt_1 by ci: CI on PR #4; 3 of 5 checks; wakes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, b.String())
		}
	}
	if lines := strings.Split(b.String(), "\n"); !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "1 ") && strings.Contains(l, "x_1") && strings.Contains(l, "  1  ")
	}) {
		t.Errorf("attempt 1's row lacks its exit code 1:\n%s", b.String())
	}
	// Negative control: a Work that never ran says 0 attempts, no table,
	// and no Wait.
	b.Reset()
	d.Executions, d.Wait = nil, nil
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "attempts  0") || strings.Contains(b.String(), "ATTEMPT") || strings.Contains(b.String(), "wait ") {
		t.Errorf("a Work that never ran:\n%s", b.String())
	}
}

func TestRoutedTextSaysWhereTheEventWent(t *testing.T) {
	cases := []struct {
		name string
		d    client.RouteDecision
		want string
	}{
		{"created", client.RouteDecision{State: "routed", Route: 0, Work: "w_1", Created: true,
			Reasons: []client.RouteReason{{Route: 0, Handler: "manual", Match: true}}}, "routed by route 0 (manual): created w_1"},
		{"joined", client.RouteDecision{State: "routed", Route: 2, Work: "w_2"}, "routed by route 2: joined w_2"},
		{"unmatched", client.RouteDecision{State: "unmatched", Reasons: []client.RouteReason{{Route: 0, Handler: "manual",
			Reason: "manual matches only manual.request Events"}}}, "unmatched: route 0 (manual): manual matches only manual.request Events"},
		{"no routes", client.RouteDecision{State: "unmatched"}, "the scope has no routes"},
		{"failed", client.RouteDecision{State: "failed", Attempts: 3}, "a route failed (3 attempts)"},
		{"pending", client.RouteDecision{State: "pending"}, "not routed within 5s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := routedText(tc.d); !strings.Contains(got, tc.want) {
				t.Errorf("%q, want it to say %q", got, tc.want)
			}
		})
	}
}

func TestTraceSaysEachVerdictAndTheWinner(t *testing.T) {
	cases := []struct {
		name string
		tr   client.Trace
		want []string
	}{
		{"a match creating Work", client.Trace{Scope: "s", Routes: []client.RouteReason{
			{Route: 0, Handler: "gh", Reason: "not an issue"}, {Route: 1, Handler: "bad", Error: "timed out"}, {Route: 2, Handler: "manual", Match: true}},
			Decision: client.TraceDecision{Match: true, Route: 2, Handler: "manual", Kind: "manual", Keys: []string{"k"}, Display: &client.Display{Title: "Hi"}, Create: true}},
			[]string{"not an issue", "error  timed out", "yes", `route 2 (manual) wins: a new Work of kind manual, keys k, titled "Hi"`}},
		{"a join", client.Trace{Routes: []client.RouteReason{{Route: 0, Handler: "manual", Match: true}},
			Decision: client.TraceDecision{Match: true, Route: 0, Handler: "manual", Join: "w_9"}}, []string{"would join w_9"}},
		{"a refusal", client.Trace{Routes: []client.RouteReason{{Route: 0, Handler: "x", Match: true}},
			Decision: client.TraceDecision{Match: true, Handler: "x", Refused: "run-once key k already had Work"}}, []string{"no Work: run-once key"}},
		{"no match", client.Trace{Routes: []client.RouteReason{{Route: 0, Handler: "manual", Reason: "manual matches only manual.request Events"}},
			Decision: client.TraceDecision{Route: -1}},
			[]string{"no route matches: the Event would be unmatched"}},
		{"no routes", client.Trace{Scope: "s", Decision: client.TraceDecision{Route: -1}}, []string{"scope s has no routes"}},
		{"a failing route", client.Trace{Routes: []client.RouteReason{{Route: 0, Handler: "x", Error: "crashed"}},
			Decision: client.TraceDecision{Route: -1, Refused: "route 0 fails; the Event would wait and be retried"}}, []string{"no Work: route 0 fails"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeTrace(&b, tc.tr); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("the trace lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestEventsListHasARouteColumn(t *testing.T) {
	evs := client.Events{Events: []protocol.Event{
		{ID: "e1", Sequence: 1, Scope: "s", Type: "a"}, {ID: "e2", Sequence: 2, Scope: "s", Type: "b"},
		{ID: "e3", Sequence: 3, Scope: "s", Type: "c"}, {ID: "e4", Sequence: 4, Type: "d"}},
		Routes: map[string]client.EventRoute{"e1": {State: "routed", Work: "w_1"}, "e2": {State: "unmatched"}, "e3": {State: "pending"}}}
	var b bytes.Buffer
	if err := writeEvents(&b, evs, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{"ROUTE", "routed to w_1", "unmatched", "pending", "-"}
	for i, w := range want {
		if !strings.HasSuffix(strings.TrimSpace(lines[i]), w) {
			t.Errorf("line %d ends not in %q:\n%s", i, w, b.String())
		}
	}
}

func TestTimersListShowsDueWithOffsetAndRecurrence(t *testing.T) {
	due := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	err := writeTimers(&b, []client.Timer{
		{ID: "schedule/j1", Owner: "schedule", Scope: "s", Due: due, Family: "schedule.fired", Fired: 3,
			Recurrence: &client.Recurrence{Kind: "schedule.cron", Rule: []byte(`{"expr":"@every 30s"}`)}},
		{ID: "p/once", Owner: "p", Due: due, Family: "p.t"}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"schedule/j1", timeText(due), `schedule.cron {"expr":"@every 30s"}`, "3\n", "p/once"} {
		if !strings.Contains(out, w) {
			t.Errorf("timers lack %q:\n%s", w, out)
		}
	}
	if !strings.Contains(timeText(due), " +") && !strings.Contains(timeText(due), " -") {
		t.Errorf("the due time has no offset: %s", timeText(due))
	}
}

// TestWorkShowSaysWhoHoldsThePendingWork: a held Work shows the gate's
// package and reason; a settled hold shows nothing.
func TestWorkShowSaysWhoHoldsThePendingWork(t *testing.T) {
	since := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	d := client.WorkDetail{Work: client.Work{ID: "w_h", Scope: "alpha", Kind: "deploy", State: "pending",
		Reason: "held by approvals's start gate: needs a reviewer",
		Hold:   &client.WorkHold{Package: "approvals", Reason: "needs a reviewer", Since: since, Held: true}}}
	var b bytes.Buffer
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pending (held by approvals's start gate: needs a reviewer)", "held", "by approvals's start gate since 2030-01-01T12:00:00Z: needs a reviewer"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	d.Work.Hold.Held, d.Work.Reason = false, ""
	if err := writeWorkDetail(&b, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "start gate") {
		t.Errorf("a settled hold is shown:\n%s", b.String())
	}
}
