package notes_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// token guards the entry in scope locked.
const token = "tok-61c2"

// entry is a notes entry named name in scope with config cfg.
func entry(scope, name, cfg string) sdk.Entry {
	return sdk.Entry{Scope: scope, Type: notes.Name, Name: name, Config: jsontext.Value(cfg)}
}

func TestEachReleaseIsAValidPackageAtItsLayout(t *testing.T) {
	for n, want := range map[int]struct {
		version string
		routes  bool
	}{1: {"1.0.0", false}, 2: {"2.0.0", false}, 3: {"3.0.0", true}} {
		m := notes.Release(n).Manifest
		if err := m.Validate(); err != nil {
			t.Fatalf("release %d breaks a manifest rule: %v", n, err)
		}
		if m.Version != want.version || m.KVVersion != n || !protocol.IsHostRun(m.Command, notes.Name) {
			t.Fatalf("release %d: version %s, kv_version %d, command %v", n, m.Version, m.KVVersion, m.Command)
		}
		for _, method := range []string{protocol.MethodWebhookHandle, protocol.MethodIngressPush, protocol.MethodOperationCall} {
			if !m.Enabled(method) {
				t.Errorf("release %d does not enable %s", n, method)
			}
		}
		for _, method := range []string{protocol.MethodRouteMatch, protocol.MethodWorkKindTrigger, protocol.MethodRecurrenceNext, protocol.MethodTaskRun} {
			if m.Enabled(method) != want.routes {
				t.Errorf("release %d enables %s: %v, want %v", n, method, m.Enabled(method), want.routes)
			}
		}
	}
	if notes.Extension().Manifest.Version != "3.0.0" {
		t.Error("the served package is not release 3")
	}
	if _, err := protocol.ParseCertification(notes.Certification); err != nil {
		t.Errorf("certification.json: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Release(4) built a package")
		}
	}()
	notes.Release(4)
}

// TestCertificationCasesPassAgainstTheServedRelease runs the fixture's
// operation cases and its ingress case the way a certifier would.
func TestCertificationCasesPassAgainstTheServedRelease(t *testing.T) {
	f, err := protocol.ParseCertification(notes.Certification)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, oc := range f.Fixture.Operations {
		h := sdktest.New(t, notes.Extension())
		var res protocol.OperationCallResult
		err := h.Raw(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{Operation: oc.Operation, Input: protocol.Payload{Data: oc.Input}, RequestID: "cert"}, &res)
		if oc.Expect.Code != "" {
			if protocol.CodeOf(err) != oc.Expect.Code {
				t.Errorf("%s %s: %v, want %s", oc.Operation, oc.Input, err, oc.Expect.Code)
			}
			continue
		}
		var got, want map[string]any
		if err != nil || json.Unmarshal(res.Output.Data, &got) != nil || json.Unmarshal(oc.Expect.Output, &want) != nil {
			t.Fatalf("%s %s: %v (%s)", oc.Operation, oc.Input, err, res.Output.Data)
		}
		for k, v := range want {
			if a, b := jsonText(got[k]), jsonText(v); a != b {
				t.Errorf("%s: output %s is %s, want %s", oc.Operation, k, a, b)
			}
		}
	}
	for _, ic := range f.Fixture.Ingress {
		h := sdktest.New(t, notes.Extension(), sdktest.WithEntries(entry("cert", "e1", string(ic.Config))))
		res := handle(t, h, "/notes/cert/e1", string(ic.Delivery), "")
		if res.Status != http.StatusAccepted || len(res.Deliveries) != 1 {
			t.Fatalf("the ingress case: %+v", res)
		}
		if evs := pushed(t, h, res.Deliveries[0]); len(evs) != 1 || evs[0].Type != ic.Family {
			t.Fatalf("the ingress case's Events: %+v, want one %s", evs, ic.Family)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// hookHarness serves release 3 with an open entry (scope open) and one
// selecting the token secret (scope locked).
func hookHarness(t *testing.T) *sdktest.Harness {
	t.Helper()
	return sdktest.New(t, notes.Extension(),
		sdktest.WithEntries(entry("open", "book", `{}`), entry("locked", "book", `{}`)),
		sdktest.WithSecrets("locked", map[string]string{notes.TokenSecret: token}))
}

// handle sends one POST to path with body and an Authorization header.
func handle(t *testing.T, h *sdktest.Harness, path, body, auth string) protocol.WebhookHandleResult {
	t.Helper()
	return request(t, h, http.MethodPost, path, body, auth)
}

func request(t *testing.T, h *sdktest.Harness, method, path, body, auth string) protocol.WebhookHandleResult {
	t.Helper()
	headers := map[string][]string{"Content-Type": {"application/json"}}
	if auth != "" {
		headers["authorization"] = []string{auth}
	}
	var res protocol.WebhookHandleResult
	if err := h.Raw(context.Background(), protocol.MethodWebhookHandle,
		protocol.WebhookHandleParams{Path: path, Method: method, Headers: headers, Body: []byte(body)}, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// pushed is the Events ingress.push makes of d.
func pushed(t *testing.T, h *sdktest.Harness, d protocol.Delivery) []protocol.EventDraft {
	t.Helper()
	var res protocol.IngressPushResult
	if err := h.Raw(context.Background(), protocol.MethodIngressPush, d, &res); err != nil {
		t.Fatal(err)
	}
	return res.Events
}

func TestWebhookAcceptsANoteOrRefusesItWithNothingDelivered(t *testing.T) {
	h := hookHarness(t)
	note := `{"id":"n-7","thread":"release","text":"!the build is red"}`
	long := `{"id":"n-8","thread":"release","text":"` + strings.Repeat("x", notes.MaxText+1) + `"}`
	for _, tc := range []struct {
		name, method, path, body, auth string
		status                         int
	}{
		{"a note to an open entry", "POST", "/notes/open/book", note, "", 202},
		{"a note with its token", "POST", "/notes/locked/book", note, "Bearer " + token, 202},
		{"a text of exactly 4 KiB", "POST", "/notes/open/book", `{"id":"n-9","thread":"t","text":"` + strings.Repeat("x", notes.MaxText) + `"}`, "", 202},
		{"no token", "POST", "/notes/locked/book", note, "", 401},
		{"another token", "POST", "/notes/locked/book", note, "Bearer tok-other", 401},
		{"the token without Bearer", "POST", "/notes/locked/book", note, token, 401},
		{"no id", "POST", "/notes/open/book", `{"thread":"release","text":"x"}`, "", 400},
		{"no thread", "POST", "/notes/open/book", `{"id":"n-1","text":"x"}`, "", 400},
		{"a thread with a slash", "POST", "/notes/open/book", `{"id":"n-1","thread":"a/b"}`, "", 400},
		{"a text over 4 KiB", "POST", "/notes/open/book", long, "", 400},
		{"an unknown field", "POST", "/notes/open/book", `{"id":"n-1","thread":"t","by":"ada"}`, "", 400},
		{"not JSON", "POST", "/notes/open/book", `note`, "", 400},
		{"a GET", "GET", "/notes/open/book", note, "", 405},
		{"a path no entry has", "POST", "/notes/open/other", note, "", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := request(t, h, tc.method, tc.path, tc.body, tc.auth)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d", res.Status, tc.status)
			}
			if tc.status != 202 {
				if len(res.Deliveries) != 0 {
					t.Fatalf("a %d carries deliveries: %+v", res.Status, res.Deliveries)
				}
				return
			}
			scope := strings.Split(tc.path, "/")[2]
			if len(res.Deliveries) != 1 || res.Deliveries[0].Source != "notes/"+scope+"/book" {
				t.Fatalf("deliveries %+v, want one from notes/%s/book", res.Deliveries, scope)
			}
			var sent notes.Note
			_ = json.Unmarshal([]byte(tc.body), &sent)
			if res.Deliveries[0].DeliveryID != sent.ID {
				t.Fatalf("delivery ID %q, want the note's id %q", res.Deliveries[0].DeliveryID, sent.ID)
			}
			evs := pushed(t, h, res.Deliveries[0])
			var got notes.Note
			if len(evs) != 1 || evs[0].Scope != scope || evs[0].Type != notes.Added || evs[0].Payload.Schema != notes.AddedSchema ||
				json.Unmarshal(evs[0].Payload.Data, &got) != nil || got != sent {
				t.Fatalf("push made %+v, want one %s in %s carrying %+v", evs, notes.Added, scope, sent)
			}
		})
	}
}

func TestWebhookOfAnEntryWhoseConnectionDoesNotResolveRefusesEveryRequest(t *testing.T) {
	e := entry("acme", "book", `{}`)
	e.Connection = "missing"
	h := sdktest.New(t, notes.Extension(), sdktest.WithEntries(e))
	for _, auth := range []string{"", "Bearer ", "Bearer anything"} {
		if res := handle(t, h, "/notes/acme/book", `{"id":"n-1","thread":"t"}`, auth); res.Status != 401 || len(res.Deliveries) != 0 {
			t.Fatalf("auth %q: %+v, want 401 and nothing", auth, res)
		}
	}
}

func TestPushRefusesADeliveryTheWebhookDidNotMake(t *testing.T) {
	h := hookHarness(t)
	var res protocol.IngressPushResult
	err := h.Raw(context.Background(), protocol.MethodIngressPush,
		protocol.Delivery{Source: "notes/open/book", DeliveryID: "x", Payload: protocol.Payload{Data: jsontext.Value(`{"id":"x"}`)}}, &res)
	if !errors.Is(err, protocol.ErrInvalid) || len(res.Events) != 0 {
		t.Fatalf("push of a foreign payload: %v %+v, want invalid", err, res)
	}
}

func TestConfigureRegistersEachEntrysPathAndSource(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	res, err := h.Configure(context.Background(), sdk.ConfigureParams{Entries: []sdk.Entry{entry("a", "one", `{}`), entry("b", "two", `{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.WebhookPaths, " "); got != "/notes/a/one /notes/b/two" {
		t.Errorf("paths %s", got)
	}
	if len(res.Sources) != 2 || res.Sources[1].Name != "notes/b/two" || res.Sources[1].Families[0] != notes.Added {
		t.Errorf("sources %+v", res.Sources)
	}
}

// matched is what route.match answers, as the tests read it.
func matched(t *testing.T, h *sdktest.Harness, ev protocol.Event) protocol.RouteMatchResult {
	t.Helper()
	var res protocol.RouteMatchResult
	p := protocol.RouteMatchParams{Scope: "s1", Route: protocol.RouteRef{Handler: notes.Name}, Event: ev}
	if err := h.Raw(context.Background(), protocol.MethodRouteMatch, p, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func added(id, thread, text string) protocol.Event {
	data, _ := json.Marshal(notes.Note{ID: id, Thread: thread, Text: text})
	return protocol.Event{ID: "ev-" + id, Type: notes.Added, Payload: protocol.Payload{Schema: notes.AddedSchema, Data: data}}
}

func TestRouteMatchesANoteIntoItsThreadsWork(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	digest, _ := json.Marshal(notes.DigestData{Entry: "book", ScheduledAt: at})
	for _, tc := range []struct {
		name   string
		event  protocol.Event
		kind   string
		key    string
		title  string
		ref    string
		reason string
	}{
		{"a note", added("n-1", "release", "hi"), notes.ThreadKind, "notes:release", "release", "", ""},
		{"a note on another thread", added("n-2", "ops", "!down"), notes.ThreadKind, "notes:ops", "ops", "", ""},
		{"a digest", protocol.Event{Type: notes.Digest, Payload: protocol.Payload{Schema: notes.DigestSchema, Data: digest}},
			notes.Digest, "notes-digest:book@2026-11-30T09:00:00Z", "digest of book", "2026-11-30 09:00", ""},
		{"a note naming no thread", protocol.Event{Type: notes.Added, Payload: protocol.Payload{Data: jsontext.Value(`{"id":"x"}`)}},
			"", "", "", "", "the notes.added Event names no thread"},
		{"another family", protocol.Event{Type: "webhook.received"}, "", "", "", "", "notes matches only notes.added and notes.digest Events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := matched(t, h, tc.event)
			if tc.kind == "" {
				if res.Match || res.Reason != tc.reason {
					t.Fatalf("%+v, want no match saying %q", res, tc.reason)
				}
				return
			}
			if !res.Match || res.Kind != tc.kind || strings.Join(res.Keys, ",") != tc.key || res.Display == nil ||
				res.Display.Title != tc.title || res.Display.Ref != tc.ref {
				t.Fatalf("%+v (display %+v), want %s %s titled %q ref %q", res, res.Display, tc.kind, tc.key, tc.title, tc.ref)
			}
		})
	}
}

func TestSamplesAreEventsTheRouteMatches(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	now := time.Date(2026, 11, 30, 12, 0, 30, 0, time.UTC)
	var s protocol.RouteSamplesResult
	if err := h.Raw(context.Background(), protocol.MethodRouteSamples,
		protocol.RouteSamplesParams{Scope: "s1", Route: protocol.RouteRef{Handler: notes.Name}, Now: now}, &s); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, sm := range s.Samples {
		res := matched(t, h, protocol.Event{Scope: "s1", Type: sm.Event.Type, Payload: sm.Event.Payload})
		if !res.Match {
			t.Fatalf("sample %s does not match: %s", sm.ID, res.Reason)
		}
		kinds[res.Kind] = true
	}
	if len(s.Samples) != 2 || !kinds[notes.ThreadKind] || !kinds[notes.Digest] {
		t.Fatalf("samples %+v route to %v, want one of each kind", s.Samples, kinds)
	}
}

func TestTriggerIsTheFirstUrgentNoteElseTheFirstInput(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	for _, tc := range []struct {
		name   string
		inputs []protocol.Event
		want   string
	}{
		{"one plain note", []protocol.Event{added("a", "t", "hello")}, "ev-a"},
		{"an urgent note after a plain one", []protocol.Event{added("a", "t", "hello"), added("b", "t", "!fire"), added("c", "t", "!later")}, "ev-b"},
		{"a ! not at the start", []protocol.Event{added("a", "t", "hi"), added("b", "t", "hi!")}, "ev-a"},
		{"an input that is not a note", []protocol.Event{{ID: "ev-x", Type: "other"}, added("b", "t", "!fire")}, "ev-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res protocol.WorkKindTriggerResult
			p := protocol.WorkKindTriggerParams{Kind: notes.ThreadKind, Work: protocol.WorkView{ID: "w", Kind: notes.ThreadKind}, Inputs: tc.inputs}
			if err := h.Raw(context.Background(), protocol.MethodWorkKindTrigger, p, &res); err != nil {
				t.Fatal(err)
			}
			if res.Trigger != tc.want {
				t.Fatalf("trigger %q, want %q", res.Trigger, tc.want)
			}
		})
	}
}

func TestDigestRecurrenceIsOneIntervalStrictlyAfterTheFiring(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	fired := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(notes.DigestData{Entry: "book", ScheduledAt: fired})
	ask := func(rule string) (protocol.RecurrenceNextResult, error) {
		var res protocol.RecurrenceNextResult
		err := h.Raw(context.Background(), protocol.MethodRecurrenceNext, protocol.RecurrenceNextParams{
			Timer: "s1/book", Kind: notes.Digest, Rule: jsontext.Value(rule), After: fired,
			Payload: protocol.Payload{Schema: notes.DigestSchema, Data: payload}}, &res)
		return res, err
	}
	res, err := ask(`"24h0m0s"`)
	var d notes.DigestData
	if err != nil || res.Payload == nil || json.Unmarshal(res.Payload.Data, &d) != nil {
		t.Fatalf("next: %+v %v", res, err)
	}
	if want := fired.Add(24 * time.Hour); !res.Next.Equal(want) || !res.Next.After(fired) || res.Done || !d.ScheduledAt.Equal(want) || d.Entry != "book" {
		t.Fatalf("next %+v (payload %+v), want %s", res, d, want)
	}
	for _, bad := range []string{`"30s"`, `"daily"`, `{"every":"1h"}`} {
		if _, err := ask(bad); !errors.Is(err, protocol.ErrInvalid) {
			t.Errorf("rule %s: %v, want invalid", bad, err)
		}
	}
}

func TestConfigureArmsADigestPerEntryAndCancelsItWhenDropped(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, notes.Extension(), sdktest.WithScopes("s1"))
	before := time.Now().UTC()
	gen := func(id int64, entries ...sdk.Entry) {
		t.Helper()
		if _, err := h.Configure(ctx, sdk.ConfigureParams{Generation: protocol.Generation{ID: id}, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	gen(1, entry("s1", "book", `{"digest_every":"1h"}`), entry("s1", "quiet", `{}`))
	timers := h.Host().Timers()
	if len(timers) != 1 {
		t.Fatalf("timers %+v, want one for book alone", timers)
	}
	tm := timers[0]
	if tm.ID != "s1/book" || tm.Family != notes.Digest || tm.Recurrence == nil || tm.Recurrence.Kind != notes.Digest ||
		string(tm.Recurrence.Rule) != `"1h0m0s"` || tm.Due.Before(before.Add(time.Hour)) {
		t.Fatalf("book's timer %+v, want notes.digest every 1h0m0s, due an hour on", tm)
	}
	gen(2, entry("s1", "book", `{"digest_every":"1h"}`))
	if timers := h.Host().Timers(); len(timers) != 1 || !timers[0].Due.Equal(tm.Due) {
		t.Fatalf("an unchanged digest was rearmed: %+v", timers)
	}
	gen(3, entry("s1", "book", `{}`))
	if timers := h.Host().Timers(); len(timers) != 0 {
		t.Fatalf("after book dropped its digest: %+v, want none", timers)
	}
	if armed := h.KV(notes.Armed); len(armed) != 0 {
		t.Fatalf("armed digests in KV %v, want none", armed)
	}
}

func TestValidateRefusesABadDigestIntervalAndOlderReleasesWarn(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		release int
		config  string
		err     string
		warn    bool
	}{
		{3, `{"digest_every":"24h"}`, "", false},
		{3, `{"digest_every":"30s"}`, "shorter than 1m0s", false},
		{3, `{"digest_every":"daily"}`, "not a Go duration", false},
		{3, `{"every":"1h"}`, "every", false},
		{1, `{"digest_every":"24h"}`, "", true},
		{2, `{}`, "", false},
	} {
		h := sdktest.New(t, notes.Release(tc.release))
		res, err := h.Validate(ctx, sdk.ValidateParams{Kind: sdk.ValidateExtension, Scope: "s1", Type: notes.Name, Name: "book", Config: jsontext.Value(tc.config)})
		switch {
		case tc.err != "" && (!errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("release %d %s: %v, want invalid saying %q", tc.release, tc.config, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("release %d %s: %v", tc.release, tc.config, err)
		case tc.err == "" && (len(res.Warnings) > 0) != tc.warn:
			t.Errorf("release %d %s: warnings %v, want some: %v", tc.release, tc.config, res.Warnings, tc.warn)
		}
	}
}
