package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/schedule"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

func TestManifestIsHostRunAndValid(t *testing.T) {
	m := schedule.Extension().Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !protocol.IsHostRun(m.Command, schedule.Name) {
		t.Fatalf("command %v", m.Command)
	}
	if len(m.Provides.WorkKinds) != 1 || !m.Provides.WorkKinds[0].Timed || m.Provides.WorkKinds[0].Kind != schedule.Run {
		t.Fatalf("work kinds %+v, want schedule.run timed", m.Provides.WorkKinds)
	}
	if _, err := protocol.ParseCertification(schedule.Certification); err != nil {
		t.Fatalf("certification: %v", err)
	}
}

func entry(scope, name, config string) protocol.Entry {
	return protocol.Entry{Scope: scope, Type: schedule.Name, Name: name, Config: []byte(config)}
}

// TestValidateRefusesABadJobNamingIt: each bad job is refused invalid, its
// message naming the job and what to change; a good entry is accepted.
func TestValidateRefusesABadJobNamingIt(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, schedule.Extension())
	cases := []struct{ name, config, want string }{
		{"a bad cron expression", `{"jobs":[{"name":"nightly","cron":"0 25 * * *"}]}`, `job "nightly": hour`},
		{"an @every under a second", `{"jobs":[{"name":"fast","cron":"@every 10ms"}]}`, `job "fast": @every 10ms is shorter`},
		{"a job named twice", `{"jobs":[{"name":"a","cron":"@hourly"},{"name":"a","cron":"@daily"}]}`, `job "a" is named twice`},
		{"a job name with a slash", `{"jobs":[{"name":"a/b","cron":"@hourly"}]}`, `name "a/b"`},
		{"an unknown field", `{"jobs":[{"name":"a","cron":"@hourly","when":"now"}]}`, `when`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.Validate(ctx, protocol.ValidateParams{Kind: protocol.ValidateExtension, Scope: "s1", Type: schedule.Name, Name: "e1", Config: []byte(c.config)})
			if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validate: %v, want invalid saying %q", err, c.want)
			}
		})
	}
	good := `{"jobs":[{"name":"tick","cron":"@every 30s"},{"name":"nightly","cron":"0 3 * * *"}]}`
	if _, err := h.Validate(ctx, protocol.ValidateParams{Kind: protocol.ValidateExtension, Scope: "s1", Type: schedule.Name, Name: "e1", Config: []byte(good)}); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
}

// TestConfigureArmsATimerPerJobAndCancelsJobsThatWentAway: the first
// generation arms one timer per job (its own family, recurrence kind and
// payload naming the occurrence); the next, with a job gone, cancels its
// timer and keeps the other's.
func TestConfigureArmsATimerPerJobAndCancelsJobsThatWentAway(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, schedule.Extension(), sdktest.WithScopes("s1"))
	two := entry("s1", "e1", `{"jobs":[{"name":"tick","cron":"@every 30s"},{"name":"nightly","cron":"0 3 * * *"}]}`)
	before := time.Now().UTC()
	if _, err := h.Configure(ctx, protocol.ConfigureParams{Generation: protocol.Generation{ID: 1}, Entries: []protocol.Entry{two}}); err != nil {
		t.Fatal(err)
	}
	timers := h.Host().Timers()
	if len(timers) != 2 || timers[0].ID != "s1/e1/nightly" || timers[1].ID != "s1/e1/tick" {
		t.Fatalf("armed %+v, want one timer per job", timers)
	}
	tick := timers[1]
	var d schedule.FiredData
	if err := json.Unmarshal(tick.Payload.Data, &d); err != nil {
		t.Fatal(err)
	}
	if tick.Family != schedule.Fired || tick.Recurrence == nil || tick.Recurrence.Kind != schedule.Cron ||
		d.Job != "tick" || d.Entry != "e1" || !d.ScheduledAt.Equal(tick.Due) || !tick.Due.After(before) || tick.Due.Sub(before) > 30*time.Second {
		t.Fatalf("tick's timer %+v (payload %+v), want the next 30 s boundary, schedule.fired, schedule.cron", tick, d)
	}
	one := entry("s1", "e1", `{"jobs":[{"name":"tick","cron":"@every 30s"}]}`)
	if _, err := h.Configure(ctx, protocol.ConfigureParams{Generation: protocol.Generation{ID: 2}, Entries: []protocol.Entry{one}}); err != nil {
		t.Fatal(err)
	}
	if timers := h.Host().Timers(); len(timers) != 1 || timers[0].ID != "s1/e1/tick" || !timers[0].Due.Equal(tick.Due) {
		t.Fatalf("after the nightly job went away: %+v, want tick's timer alone, unchanged", timers)
	}
	if armed := h.KV(schedule.Armed); len(armed) != 1 || string(armed["s1/e1/tick"]) != "@every 30s" {
		t.Fatalf("armed jobs in KV %v", armed)
	}
	// The empty generation a restarted package is configured with first
	// cancels nothing.
	if err := h.Raw(ctx, protocol.MethodConfigure, protocol.ConfigureParams{}, nil); err != nil {
		t.Fatal(err)
	}
	if timers := h.Host().Timers(); len(timers) != 1 {
		t.Fatalf("after the empty generation: %+v, want tick's timer kept", timers)
	}
}

// TestRecurrenceNextIsTheFollowingOccurrenceWithItsPayload: schedule.cron
// answers the occurrence after the one that fired, with a payload naming
// it; a rule that is not its own is refused.
func TestRecurrenceNextIsTheFollowingOccurrenceWithItsPayload(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, schedule.Extension())
	fired := time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(schedule.FiredData{Entry: "e1", Job: "nightly", ScheduledAt: fired})
	p := protocol.RecurrenceNextParams{Timer: "s1/e1/nightly", Kind: schedule.Cron, Rule: []byte(`{"cron":"0 3 * * *"}`),
		After: fired, Payload: protocol.Payload{Schema: schedule.FiredSchema, Data: payload}}
	var res protocol.RecurrenceNextResult
	if err := h.Raw(ctx, protocol.MethodRecurrenceNext, p, &res); err != nil {
		t.Fatal(err)
	}
	var d schedule.FiredData
	_ = json.Unmarshal(res.Payload.Data, &d)
	if want := fired.AddDate(0, 0, 1); !res.Next.Equal(want) || res.Done || !d.ScheduledAt.Equal(want) || d.Job != "nightly" {
		t.Fatalf("next %+v (payload %+v), want %s", res, d, want)
	}
	p.Rule = []byte(`{"cron":"61 * * * *"}`)
	if err := h.Raw(ctx, protocol.MethodRecurrenceNext, p, &res); !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("a bad rule: %v, want invalid", err)
	}
}

// TestRouteMatchMakesOneTimedWorkPerRun: a firing matches as schedule.run
// keyed by its run and titled by its job; any other Event does not match,
// saying why.
func TestRouteMatchMakesOneTimedWorkPerRun(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, schedule.Extension())
	at := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	data, _ := json.Marshal(schedule.FiredData{Entry: "e1", Job: "tick", ScheduledAt: at})
	type result struct {
		Match   bool     `json:"match"`
		Reason  string   `json:"reason"`
		Kind    string   `json:"kind"`
		Keys    []string `json:"keys"`
		Display struct {
			Title string `json:"title"`
		} `json:"display"`
	}
	cases := []struct {
		name  string
		event protocol.Event
		want  result
	}{
		{"a firing", protocol.Event{Type: schedule.Fired, Payload: protocol.Payload{Schema: schedule.FiredSchema, Data: data}},
			result{Match: true, Kind: schedule.Run, Keys: []string{"schedule:e1/tick/2026-05-01T12:00:30Z"}}},
		{"another family", protocol.Event{Type: "manual.request"}, result{Reason: "schedule matches only schedule.fired Events"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got result
			if err := h.Raw(ctx, "route.match", map[string]any{"scope_id": "s1", "route": map[string]any{"index": 0, "handler": schedule.Handler}, "event": c.event}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Match != c.want.Match || got.Kind != c.want.Kind || strings.Join(got.Keys, ",") != strings.Join(c.want.Keys, ",") ||
				(!c.want.Match && got.Reason != c.want.Reason) || (c.want.Match && got.Display.Title != "tick") {
				t.Fatalf("route.match %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestSamplesAreFiringsDueAtTheHostsNowThatTheRouteMatches: the handler's
// sample is a firing written as of the host's clock, and the handler
// matches it, so a trace of it shows a run being made.
func TestSamplesAreFiringsDueAtTheHostsNowThatTheRouteMatches(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, schedule.Extension())
	now := time.Date(2026, 5, 1, 12, 0, 30, 500, time.UTC)
	route := protocol.RouteRef{Handler: schedule.Handler}
	var s protocol.RouteSamplesResult
	if err := h.Raw(ctx, protocol.MethodRouteSamples, protocol.RouteSamplesParams{Scope: "s1", Route: route, Now: now}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) != 1 {
		t.Fatalf("samples %+v, want one", s.Samples)
	}
	var d schedule.FiredData
	if err := json.Unmarshal(s.Samples[0].Event.Payload.Data, &d); err != nil || !d.ScheduledAt.Equal(now.Truncate(time.Second)) {
		t.Errorf("sample %s due %v (%v), want the host's now %v", s.Samples[0].Event.Payload.Data, d.ScheduledAt, err, now)
	}
	var m protocol.RouteMatchResult
	ev := protocol.Event{Scope: "s1", Type: s.Samples[0].Event.Type, Payload: s.Samples[0].Event.Payload}
	if err := h.Raw(ctx, protocol.MethodRouteMatch, protocol.RouteMatchParams{Scope: "s1", Route: route, Event: ev, Now: now}, &m); err != nil || !m.Match || m.Kind != schedule.Run {
		t.Errorf("the sample routes to %+v (%v), want a %s match", m, err, schedule.Run)
	}
}

// TestRunsTaskCountsEachJobsFiringsOnce: the task counts the firings in the
// log per job, with the last occurrence, and a second pass over the same
// log counts nothing again; other Events are not counted.
func TestRunsTaskCountsEachJobsFiringsOnce(t *testing.T) {
	ctx := context.Background()
	fire := func(job string, at time.Time) protocol.Emission {
		data, _ := json.Marshal(schedule.FiredData{Entry: "e1", Job: job, ScheduledAt: at})
		return protocol.Emission{Source: "schedule/timer", DeliveryID: "s1/e1/" + job + "@" + at.Format(time.RFC3339), Type: schedule.Fired,
			Payload: protocol.Payload{Schema: schedule.FiredSchema, Data: data}}
	}
	t1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h := sdktest.New(t, schedule.Extension(), sdktest.WithScopes("s1"), sdktest.WithEvents("s1",
		fire("tick", t1), fire("tick", t1.Add(30*time.Second)), fire("nightly", t1),
		protocol.Emission{Source: "other", DeliveryID: "x", Type: "other.seen"}))
	for range 2 {
		if err := h.RunTask(ctx, schedule.RunsTask); err != nil {
			t.Fatal(err)
		}
	}
	runs := h.KV(schedule.Runs)
	var tick, nightly schedule.JobRuns
	_ = json.Unmarshal(runs["s1/e1/tick"], &tick)
	_ = json.Unmarshal(runs["s1/e1/nightly"], &nightly)
	if tick.Count != 2 || !tick.LastFired.Equal(t1.Add(30*time.Second)) || nightly.Count != 1 || len(runs) != 3 {
		t.Fatalf("runs %v, want tick twice (last 12:00:30), nightly once, and the cursor", runs)
	}
}
