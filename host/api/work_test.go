package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// workRecorder is a Daemon serving the Work routes: it records what each
// route passed it and answers with err.
type workRecorder struct {
	recorder
	calls   int
	works   client.WorkQuery
	id      string
	reason  string
	emitted client.EmitRequest
	wait    time.Duration
	scope   string
	traced  client.TraceEvent
	timers  client.TimersQuery
	changes client.ChangesQuery
	inputs  client.WorkInputsQuery
}

func (r *workRecorder) Works(_ context.Context, q client.WorkQuery) (client.WorkList, error) {
	r.calls++
	r.works = q
	return client.WorkList{Work: []client.Work{{ID: "w_1", State: client.WorkPending}}, Next: "w_1"}, r.err
}

func (r *workRecorder) Work(_ context.Context, id string) (client.WorkDetail, error) {
	r.calls++
	r.id = id
	return client.WorkDetail{Work: client.Work{ID: id}}, r.err
}

func (r *workRecorder) WorkInputs(_ context.Context, id string, q client.WorkInputsQuery) (client.WorkInputsPage, error) {
	r.calls++
	r.id, r.inputs = id, q
	return client.WorkInputsPage{Work: id, InputCount: 70, Inputs: []client.WorkInput{}, Next: q.After + 1}, r.err
}

func (r *workRecorder) CancelWork(_ context.Context, id, reason string) (client.Work, error) {
	r.calls++
	r.id, r.reason = id, reason
	return client.Work{ID: id, State: client.WorkCancelled, Reason: reason}, r.err
}

func (r *workRecorder) Emit(_ context.Context, req client.EmitRequest) (protocol.Event, error) {
	r.calls++
	r.emitted = req
	return protocol.Event{ID: "e1", Sequence: 7, Scope: req.Scope, Type: req.Type}, r.err
}

func (r *workRecorder) EventRoute(_ context.Context, id string, wait time.Duration) (client.RouteDecision, error) {
	r.calls++
	r.id, r.wait = id, wait
	return client.RouteDecision{Event: id, State: client.RouteRouted, Work: "w_1"}, r.err
}

func (r *workRecorder) RouteTrace(_ context.Context, scope string, ev client.TraceEvent) (client.Trace, error) {
	r.calls++
	r.scope, r.traced = scope, ev
	return client.Trace{Scope: scope, Event: protocol.Event{Type: ev.Type}, Routes: []client.RouteReason{}}, r.err
}

func (r *workRecorder) RouteSamples(_ context.Context, scope string) (client.Samples, error) {
	r.calls++
	r.scope = scope
	return client.Samples{Scope: scope, Samples: []client.Sample{}}, r.err
}

func (r *workRecorder) Timers(_ context.Context, q client.TimersQuery) (client.Timers, error) {
	r.calls++
	r.timers = q
	return client.Timers{Timers: []client.Timer{}}, r.err
}

func (r *workRecorder) Changes(_ context.Context, q client.ChangesQuery) (client.Changes, error) {
	r.calls++
	r.changes = q
	return client.Changes{Events: []protocol.Event{}, Tick: q.Tick + 1, Changed: true}, r.err
}

func TestWorkRoutesPassTheirRequestToTheDaemon(t *testing.T) {
	r := &workRecorder{}
	cases := []struct {
		method, path, body string
		check              func() bool
		answer             string
	}{
		{"GET", "/v1/work?scope=alpha&state=pending&after=w_0&limit=5", "",
			func() bool {
				return r.works == client.WorkQuery{Scope: "alpha", State: "pending", After: "w_0", Limit: 5}
			}, `"next":"w_1"`},
		{"GET", "/v1/work", "", func() bool { return r.works == client.WorkQuery{Limit: client.MaxWorkPage} }, `"work":[`},
		{"GET", "/v1/work?order=newest&state=failed&after=w_5", "",
			func() bool {
				return r.works == client.WorkQuery{State: "failed", After: "w_5", Limit: client.MaxWorkPage, Newest: true}
			}, `"work":[`},
		{"GET", "/v1/work?order=oldest", "", func() bool { return r.works == client.WorkQuery{Limit: client.MaxWorkPage} }, `"work":[`},
		{"GET", "/v1/work/w_9", "", func() bool { return r.id == "w_9" }, `"work":{`},
		{"GET", "/v1/work/w_9/inputs?after=64&limit=10", "",
			func() bool { return r.id == "w_9" && r.inputs == client.WorkInputsQuery{After: 64, Limit: 10} }, `"next":65`},
		{"GET", "/v1/work/w_8/inputs", "",
			func() bool {
				return r.id == "w_8" && r.inputs == client.WorkInputsQuery{Limit: client.MaxWorkInputsPage}
			}, `"input_count":70`},
		{"POST", "/v1/work/w_9/cancel", `{"reason": "duplicate"}`, func() bool { return r.id == "w_9" && r.reason == "duplicate" }, `"state":"cancelled"`},
		{"POST", "/v1/work/w_8/cancel", "", func() bool { return r.id == "w_8" && r.reason == "" }, `"state":"cancelled"`},
		{"POST", "/v1/events", `{"scope_id": "alpha", "data": {"title": "x"}}`,
			func() bool {
				return r.emitted.Scope == "alpha" && r.emitted.Type == client.DefaultEmitType && string(r.emitted.Data) == `{"title": "x"}`
			}, `"sequence":7`},
		{"POST", "/v1/events", `{"scope_id": "alpha", "type": "x.y"}`, func() bool { return r.emitted.Type == "x.y" }, `"type":"x.y"`},
		{"GET", "/v1/events/e1/route?wait=5s", "", func() bool { return r.id == "e1" && r.wait == 5*time.Second }, `"state":"routed"`},
		{"GET", "/v1/events/e1/route?wait=7", "", func() bool { return r.wait == 7*time.Second }, `"work":"w_1"`},
		{"GET", "/v1/events/e1/route?wait=1h", "", func() bool { return r.wait == MaxWait }, `"event":"e1"`},
		{"GET", "/v1/events/e1/route", "", func() bool { return r.wait == 0 }, `"event":"e1"`},
		{"POST", "/v1/scopes/alpha/route/trace", `{"event": {"type": "t.x", "payload": {"data": {"a": 1}}}}`,
			func() bool {
				return r.scope == "alpha" && r.traced.Type == "t.x" && string(r.traced.Payload.Data) == `{"a": 1}`
			}, `"routes":[]`},
		{"GET", "/v1/scopes/beta/route/samples", "", func() bool { return r.scope == "beta" }, `"samples":[]`},
		{"GET", "/v1/timers?after=p/1&limit=3", "", func() bool { return r.timers == client.TimersQuery{After: "p/1", Limit: 3} }, `"timers":[]`},
		{"GET", "/v1/changes?after=12&tick=3&wait=30s", "",
			func() bool { return r.changes == client.ChangesQuery{After: 12, Tick: 3, Wait: 30 * time.Second} }, `"tick":4`},
		{"GET", "/v1/changes?after=12&wait=3600", "", func() bool { return r.changes.Wait == MaxWait }, `"changed":true`},
	}
	for _, tc := range cases {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			before := r.calls
			w, e := do(t, r, tc.method, tc.path, tc.body)
			if w.Code != http.StatusOK || r.calls != before+1 {
				t.Fatalf("%d %+v (daemon called %d times)", w.Code, e, r.calls-before)
			}
			if !tc.check() {
				t.Errorf("the request reached the daemon wrong: %+v", r)
			}
			if !strings.Contains(w.Body.String(), tc.answer) {
				t.Errorf("the answer lacks %s: %s", tc.answer, w.Body)
			}
		})
	}
}

func TestWorkRoutesRefuseBadInputBeforeTheDaemon(t *testing.T) {
	cases := []struct {
		method, path, body string
		says               string
	}{
		{"GET", "/v1/work?state=done", "", "state must be one of pending"},
		{"GET", "/v1/work?limit=0", "", "limit must be between 1 and 1000"},
		{"GET", "/v1/work?limit=5000", "", "limit must be between 1 and 1000"},
		{"GET", "/v1/work?limit=x", "", "limit must be between"},
		{"GET", "/v1/work?order=desc", "", `order must be oldest (the default) or newest, not "desc"`},
		{"GET", "/v1/work?order=Newest", "", "order must be oldest (the default) or newest"},
		{"GET", "/v1/work/w_1/inputs?after=x", "", "after must be a non-negative integer"},
		{"GET", "/v1/work/w_1/inputs?after=-1", "", "after must be a non-negative integer"},
		{"GET", "/v1/work/w_1/inputs?limit=0", "", "limit must be between 1 and 1000"},
		{"GET", "/v1/work/w_1/inputs?limit=1001", "", "limit must be between 1 and 1000"},
		{"POST", "/v1/work/w_1/cancel", `{"why": "x"}`, "does not fit"},
		{"POST", "/v1/events", `{"type": "x.y"}`, "scope_id is required"},
		{"POST", "/v1/events", `{"scope_id": "a", "data": `, "not one JSON value"},
		{"GET", "/v1/events/e1/route?wait=soon", "", "wait must be seconds"},
		{"GET", "/v1/events/e1/route?wait=-5s", "", "wait must be seconds"},
		{"POST", "/v1/scopes/alpha/route/trace", `{"event": {}}`, "event.type is required"},
		{"POST", "/v1/scopes/alpha/route/trace", `{"type": "x"}`, "does not fit"},
		{"GET", "/v1/timers?limit=0", "", "limit must be between"},
		{"GET", "/v1/changes?after=-1", "", "after must be a non-negative integer"},
		{"GET", "/v1/changes?tick=x", "", "tick must be a non-negative integer"},
	}
	for _, tc := range cases {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			r := &workRecorder{}
			w, e := do(t, r, tc.method, tc.path, tc.body)
			if w.Code != http.StatusBadRequest || e.Code != protocol.CodeInvalid || !strings.Contains(e.Message, tc.says) {
				t.Errorf("%d %+v, want 400 invalid saying %q", w.Code, e, tc.says)
			}
			if r.calls != 0 {
				t.Errorf("bad input reached the daemon")
			}
		})
	}
}

func TestWorkRoutesAnswerTheDaemonsErrorsWithTheirStatus(t *testing.T) {
	notFound := protocol.Errorf(protocol.ErrNotFound, "scope zeta is not configured")
	cases := []struct {
		err                error
		method, path, body string
		status             int
	}{
		{protocol.Errorf(protocol.ErrNotFound, "no Work w_x"), "GET", "/v1/work/w_x", "", http.StatusNotFound},
		{protocol.Errorf(protocol.ErrNotFound, "no Work w_x"), "GET", "/v1/work/w_x/inputs", "", http.StatusNotFound},
		{protocol.Errorf(protocol.ErrNotFound, "no Event e9"), "GET", "/v1/events/e9/route", "", http.StatusNotFound},
		{notFound, "POST", "/v1/scopes/zeta/route/trace", `{"event": {"type": "t"}}`, http.StatusNotFound},
		{notFound, "GET", "/v1/scopes/zeta/route/samples", "", http.StatusNotFound},
		{notFound, "POST", "/v1/events", `{"scope_id": "zeta"}`, http.StatusNotFound},
		{protocol.Errorf(protocol.ErrConflict, "Work w_1 is completed"), "POST", "/v1/work/w_1/cancel", `{}`, http.StatusConflict},
		{protocol.Errorf(protocol.ErrUnavailable, "starting"), "GET", "/v1/work", "", http.StatusServiceUnavailable},
		// Negative control: no error is a 200.
		{nil, "GET", "/v1/work/w_1", "", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			w, e := do(t, &workRecorder{recorder: recorder{err: tc.err}}, tc.method, tc.path, tc.body)
			if w.Code != tc.status || (tc.err != nil && e.Message != tc.err.Error()) {
				t.Errorf("%d %+v, want %d with the daemon's message", w.Code, e, tc.status)
			}
		})
	}
}
