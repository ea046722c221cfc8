package daemon_test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// manualRoutes routes scope beta's Events through the builtin manual
// route. It has no entries, so nothing but the test writes Events.
const manualRoutes = `{"scopes": [{"id": "beta", "routes": [{"handler": "manual"}]}]}`

// cli runs the real binary's command against e's daemon and returns its
// exit status and output.
func cli(t *testing.T, e *daemontest.Env, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bins.OpenConduit, append(args, "--state", e.State)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// cliJSON runs a command with --json that must succeed, into v.
func cliJSON(t *testing.T, e *daemontest.Env, v any, args ...string) {
	t.Helper()
	code, out, errs := cli(t, e, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: the output is not its JSON: %v\n%s", args, err, out)
	}
}

type emittedJSON struct {
	Event struct {
		ID       string `json:"id"`
		Sequence uint64 `json:"sequence"`
	} `json:"event"`
	Route client.RouteDecision `json:"route"`
}

func TestOperatorEmitsListsCancelsAndShowsWorkThroughTheBinary(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(manualRoutes)
	e.Start()

	var first emittedJSON
	cliJSON(t, e, &first, "events", "emit", "--scope", "beta", "--data", `{"title": "Fix the login", "key": "login"}`)
	if first.Event.ID == "" || first.Event.Sequence == 0 {
		t.Fatalf("emit printed no Event: %+v", first)
	}
	// The emit waits only briefly; the router may still be at it.
	route := first.Route
	e.Eventually("the manual request is routed", func() bool {
		var err error
		route, err = e.C.EventRoute(t.Context(), first.Event.ID, 0)
		return err == nil && route.State == client.RouteRouted
	})
	if !route.Created || route.Work == "" {
		t.Fatalf("the first request did not create Work: %+v", route)
	}
	w := route.Work

	// A second request with the same key joins it; another type matches
	// no route (negative control), with the manual route's reason.
	var second, other emittedJSON
	cliJSON(t, e, &second, "events", "emit", "--scope", "beta", "--data", `{"title": "again", "key": "login"}`)
	cliJSON(t, e, &other, "events", "emit", "--scope", "beta", "--type", "note.added")
	e.Eventually("both are routed", func() bool {
		a, err1 := e.C.EventRoute(t.Context(), second.Event.ID, 0)
		b, err2 := e.C.EventRoute(t.Context(), other.Event.ID, 0)
		second.Route, other.Route = a, b
		return err1 == nil && err2 == nil && a.State != client.RoutePending && b.State != client.RoutePending
	})
	if second.Route.State != client.RouteRouted || second.Route.Work != w || second.Route.Created {
		t.Errorf("the same key did not join %s: %+v", w, second.Route)
	}
	if other.Route.State != client.RouteUnmatched || len(other.Route.Reasons) != 1 ||
		!strings.Contains(other.Route.Reasons[0].Reason, "manual.request") {
		t.Errorf("another type: %+v", other.Route)
	}

	var list client.WorkList
	cliJSON(t, e, &list, "work", "list", "--scope", "beta")
	if len(list.Work) != 1 || list.Work[0].ID != w || list.Work[0].State != client.WorkPending || len(list.Work[0].Inputs) != 2 ||
		list.Work[0].Display == nil || list.Work[0].Display.Title == "" {
		t.Fatalf("work list: %+v", list)
	}
	code, out, _ := cli(t, e, "work", "list", "--status", "pending")
	if code != 0 || !strings.Contains(out, w) || !strings.Contains(out, "TITLE") {
		t.Errorf("the table: %d %s", code, out)
	}
	var events client.Events
	cliJSON(t, e, &events, "events", "list", "--scope", "beta")
	if r := events.Routes[first.Event.ID]; r.State != client.RouteRouted || r.Work != w {
		t.Errorf("events list does not say where the first Event went: %+v", events.Routes)
	}
	if r := events.Routes[other.Event.ID]; r.State != client.RouteUnmatched {
		t.Errorf("events list does not say the other Event is unmatched: %+v", events.Routes)
	}

	var cancelled client.Work
	cliJSON(t, e, &cancelled, "work", "cancel", w, "--reason", "a duplicate")
	if cancelled.State != client.WorkCancelled || !strings.Contains(cancelled.Reason, "a duplicate") {
		t.Fatalf("cancel: %+v", cancelled)
	}
	code, out, errs := cli(t, e, "work", "cancel", w)
	if code != 1 || out != "" || !strings.Contains(errs, "cancelled") || strings.Count(errs, "\n") != 1 {
		t.Errorf("cancelling a finished Work: %d %q %q", code, out, errs)
	}

	var show client.WorkDetail
	cliJSON(t, e, &show, "work", "show", w)
	if show.Work.State != client.WorkCancelled || len(show.Inputs) != 2 || show.Inputs[0].Event.ID != first.Event.ID ||
		show.Inputs[0].Route == nil || !show.Inputs[0].Route.Created || show.Inputs[1].Route == nil || show.Inputs[1].Route.Work != w {
		t.Fatalf("work show: %+v", show)
	}
	code, out, _ = cli(t, e, "work", "show", w)
	for _, want := range []string{"a duplicate", "login", "manual.request"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("the show table lacks %q: %d %s", want, code, out)
		}
	}
	if code, _, errs := cli(t, e, "work", "show", "w_nosuch"); code != 1 || !strings.Contains(errs, "work list") {
		t.Errorf("an unknown Work: %d %q", code, errs)
	}

	// A cancelled Work joins nothing: the same key makes a new one.
	var third emittedJSON
	cliJSON(t, e, &third, "events", "emit", "--scope", "beta", "--data", `{"key": "login"}`)
	e.Eventually("the third request is routed", func() bool {
		r, err := e.C.EventRoute(t.Context(), third.Event.ID, 0)
		third.Route = r
		return err == nil && r.State == client.RouteRouted
	})
	if !third.Route.Created || third.Route.Work == w {
		t.Errorf("a key of cancelled Work joined it: %+v", third.Route)
	}
}

func TestRouteTraceExplainsADecisionAndWritesNothing(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(manualRoutes)
	e.Start()
	before, err := e.C.Events(t.Context(), client.EventsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, typ string
		match     bool
		says      string
	}{
		{"a manual request would create Work", "manual.request", true, "a new Work of kind manual"},
		{"another type would be unmatched", "note.added", false, "manual matches only manual.request Events"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tr client.Trace
			cliJSON(t, e, &tr, "route", "--trace", "--scope", "beta", "--type", tc.typ, "--data", `{"title": "T"}`)
			if tr.Decision.Match != tc.match || len(tr.Routes) != 1 || tr.Routes[0].Handler != "manual" {
				t.Fatalf("trace: %+v", tr)
			}
			code, out, errs := cli(t, e, "route", "--trace", "--scope", "beta", "--type", tc.typ)
			if code != 0 || !strings.Contains(out, tc.says) {
				t.Errorf("the table: %d %s %s", code, out, errs)
			}
		})
	}
	if code, _, errs := cli(t, e, "route", "--trace", "--scope", "zeta", "--type", "x"); code != 1 || !strings.Contains(errs, "not configured") {
		t.Errorf("an unknown scope: %d %q", code, errs)
	}
	after, err := e.C.Events(t.Context(), client.EventsQuery{After: before.Latest})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Events) != 0 {
		t.Errorf("a trace wrote Events: %+v", after.Events)
	}
	list, err := e.C.Works(t.Context(), client.WorkQuery{})
	if err != nil || len(list.Work) != 0 {
		t.Errorf("a trace made Work: %+v %v", list, err)
	}
}

func TestChangesLongPollWakesOnANewEventAndAWorkChange(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(manualRoutes)
	e.Start()
	ctx := t.Context()
	now, err := e.C.Changes(ctx, client.ChangesQuery{})
	if err != nil {
		t.Fatal(err)
	}
	// Negative control: with nothing new, the poll waits and answers empty.
	quiet, err := e.C.Changes(ctx, client.ChangesQuery{After: now.Latest, Tick: now.Tick, Wait: time.Second})
	if err != nil || len(quiet.Events) != 0 || quiet.Changed {
		t.Fatalf("a quiet poll: %+v %v", quiet, err)
	}
	// A daemon that restarted answers a stale tick at once.
	if stale, err := e.C.Changes(ctx, client.ChangesQuery{After: now.Latest, Tick: now.Tick + 1000, Wait: 30 * time.Second}); err != nil || !stale.Changed {
		t.Fatalf("a stale tick: %+v %v", stale, err)
	}

	polled := make(chan client.Changes, 1)
	go func() {
		ch, _ := e.C.Changes(ctx, client.ChangesQuery{After: now.Latest, Tick: now.Tick, Wait: 30 * time.Second})
		polled <- ch
	}()
	ev, err := e.C.Emit(ctx, client.EmitRequest{Scope: "beta", Type: client.DefaultEmitType})
	if err != nil {
		t.Fatal(err)
	}
	got := <-polled
	if len(got.Events) == 0 || got.Events[len(got.Events)-1].ID != ev.ID || got.Latest != ev.Sequence {
		t.Fatalf("the poll did not answer with the new Event %s: %+v", ev.ID, got)
	}
	// The routing makes Work: a poll with the last tick sees the tick move.
	var w string
	e.Eventually("the Event is routed", func() bool {
		d, err := e.C.EventRoute(ctx, ev.ID, 0)
		w = d.Work
		return err == nil && d.State == client.RouteRouted
	})
	// The feed carries each listed Event's route decision so far.
	again, err := e.C.Changes(ctx, client.ChangesQuery{After: now.Latest})
	if r := again.Routes[ev.ID]; err != nil || r.State != client.RouteRouted || r.Work != w {
		t.Fatalf("the feed's route of %s: %+v %v; want routed to %s", ev.ID, r, err, w)
	}
	last := got.Tick
	for {
		ch, err := e.C.Changes(ctx, client.ChangesQuery{After: got.Latest, Tick: last, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !ch.Changed {
			break
		}
		last = ch.Tick
	}
	go func() {
		ch, _ := e.C.Changes(ctx, client.ChangesQuery{After: got.Latest, Tick: last, Wait: 30 * time.Second})
		polled <- ch
	}()
	if _, err := e.C.CancelWork(ctx, w, "done with it"); err != nil {
		t.Fatal(err)
	}
	if ch := <-polled; !ch.Changed || len(ch.Events) != 0 || ch.Tick == last {
		t.Fatalf("cancelling Work did not move the tick: %+v", ch)
	}
}
