package engine

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// bindSource is the source the binding tests push and scan.
const bindSource = "hook/s1/a"

// bindRoutes registers the webhook path and bindSource as a source of
// hook, so it is both pushed and scanned.
type bindRoutes struct{}

func (bindRoutes) WebhookPaths() map[string]string { return map[string]string{"/hook/s1/a": "hook"} }
func (bindRoutes) IngressSources() map[string][]protocol.Source {
	return map[string][]protocol.Source{"hook": {{Name: bindSource, Families: []string{"hook.received"}, Reconcile: true}}}
}

// itemBody is what the binding tests post: the drafts' items, each of
// which pushItems drafts as one Event naming its item and version.
type itemBody struct {
	Items []itemDraft `json:"items"`
}

type itemDraft struct {
	ID      string         `json:"id,omitempty"`
	Item    string         `json:"item,omitempty"`
	Version string         `json:"version,omitempty"`
	Data    jsontext.Value `json:"data"`
}

// pushItems drafts one hook.received Event in s1 per item of the body,
// each under its own delivery ID when it names one.
func pushItems(d protocol.Delivery) (protocol.IngressPushResult, error) {
	var b itemBody
	if err := json.Unmarshal(d.Payload.Data, &b); err != nil {
		return protocol.IngressPushResult{}, protocol.Errorf(protocol.ErrInvalid, "%v", err)
	}
	var res protocol.IngressPushResult
	for _, it := range b.Items {
		res.Events = append(res.Events, protocol.EventDraft{Scope: "s1", Type: "hook.received", DeliveryID: it.ID,
			Item: it.Item, Version: it.Version, Payload: protocol.Payload{Schema: "hook.received.v1", Data: it.Data}})
	}
	return res, nil
}

// one is a body of one item at version with data.
func one(item, version, data string) itemBody {
	return itemBody{Items: []itemDraft{{Item: item, Version: version, Data: jsontext.Value(data)}}}
}

// newBindRig is the ingress rig whose package drafts pushItems and whose
// source is scanned too.
func newBindRig(t *testing.T) *ingressRig {
	t.Helper()
	r := buildIngressRig(t, bindRoutes{})
	r.pkg.push = pushItems
	return r
}

// pushVia is one way a delivery comes in: it answers the accepted Events,
// or the error (a refused webhook's status as ErrConflict, ErrInvalid …).
type pushVia func(r *ingressRig, delivery string, b itemBody) ([]protocol.EmissionResult, error)

// viaWebhook posts the body to the webhook path; a 409 is ErrConflict, a
// 502 ErrInvalid.
func viaWebhook(r *ingressRig, delivery string, b itemBody) ([]protocol.EmissionResult, error) {
	r.t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		r.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, r.base+"/hook/s1/a", bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("X-Delivery", delivery)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusAccepted:
		var out struct {
			Events []protocol.EmissionResult `json:"events"`
		}
		if err := json.UnmarshalRead(res.Body, &out); err != nil {
			r.t.Fatalf("the 202's body: %v", err)
		}
		return out.Events, nil
	case http.StatusConflict:
		return nil, protocol.Errorf(protocol.ErrConflict, "webhook answered 409")
	case http.StatusBadGateway:
		return nil, protocol.Errorf(protocol.ErrInvalid, "webhook answered 502")
	}
	return nil, fmt.Errorf("webhook answered %d", res.StatusCode)
}

// viaDeliver hands the body to Deliver, as a package's own receiver does.
func viaDeliver(r *ingressRig, delivery string, b itemBody) ([]protocol.EmissionResult, error) {
	r.t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := r.e.Deliver(context.Background(), "hook", protocol.IngressDeliverParams{Source: bindSource, DeliveryID: delivery, Body: body})
	if err == nil && !res.Accepted {
		r.t.Fatalf("Deliver answered no error and not accepted: %+v", res)
	}
	return res.Events, err
}

var pushWays = []struct {
	name string
	push pushVia
}{{"webhook", viaWebhook}, {"ingress.deliver", viaDeliver}}

// scan reconciles bindSource once with one complete page of obs.
func (r *ingressRig) scan(obs ...protocol.Observation) (ReconcileReport, error) {
	r.t.Helper()
	r.pkg.mu.Lock()
	r.pkg.reconcile = func(context.Context, protocol.IngressReconcileParams) (protocol.IngressReconcileResult, error) {
		return protocol.IngressReconcileResult{Observations: obs, Complete: true, Checkpoint: "cp"}, nil
	}
	r.pkg.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return r.e.Reconcile(ctx, "hook", bindSource)
}

// item is an observation of bindSource's item at version with data.
func item(name, version, data string) protocol.Observation {
	return protocol.Observation{Item: name, Version: version, Scope: "s1",
		Payload: protocol.Payload{Schema: "hook.received.v1", Data: jsontext.Value(data)}}
}

// conflicts is bindSource's recorded conflicts.
func (r *ingressRig) conflicts() []pebblekv.ObservationConflict {
	r.t.Helper()
	var out []pebblekv.ObservationConflict
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		out, err = rd.ObservationConflicts(bindSource, 0)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code *protocol.Error) {
	t.Helper()
	if protocol.CodeOf(err) != code.Code {
		t.Fatalf("%s: %v, want %s", what, err, code.Code)
	}
}

func TestPushedItemVersionIsBoundToOneEnvelope(t *testing.T) {
	for _, way := range pushWays {
		t.Run(way.name, func(t *testing.T) {
			r := newBindRig(t)
			first, err := way.push(r, "d1", one("i1", "v1", `{"a":1,"b":2}`))
			if err != nil || len(first) != 1 || !first[0].Added {
				t.Fatalf("the first delivery of i1@v1: %+v, %v", first, err)
			}
			// The same envelope under another delivery ID (its data's keys
			// in another order) is the bound Event, nothing new.
			again, err := way.push(r, "d2", one("i1", "v1", `{"b":2, "a":1}`))
			if err != nil || len(again) != 1 || again[0].Added || again[0].EventID != first[0].EventID {
				t.Fatalf("i1@v1 again under another delivery ID: %+v, %v; want event %s, not added", again, err, first[0].EventID)
			}
			r.wantEvents("after i1@v1 came twice with one envelope", 1)

			// Another envelope is a conflict, refused the same each time,
			// recorded each time; nothing of the delivery is accepted, not
			// even its other, new item.
			var refusals []string
			for n := range 2 {
				b := one("i1", "v1", `{"a":1,"b":3}`)
				b.Items = append([]itemDraft{{ID: fmt.Sprintf("d3/new%d", n), Item: "i2", Version: "v1", Data: jsontext.Value(`{}`)}}, b.Items...)
				b.Items[1].ID = "d3/old"
				res, err := way.push(r, "d3", b)
				wantCode(t, fmt.Sprintf("refusal %d of a conflicting i1@v1", n), err, protocol.ErrConflict)
				if len(res) != 0 {
					t.Fatalf("a refused delivery answered Events: %+v", res)
				}
				refusals = append(refusals, err.Error())
			}
			if refusals[0] != refusals[1] {
				t.Fatalf("the same conflicting delivery was refused two ways: %q, then %q", refusals[0], refusals[1])
			}
			r.wantEvents("after conflicting deliveries", 1)
			cs := r.conflicts()
			if len(cs) != 1 || cs[0].Item != "i1" || cs[0].Version != "v1" || cs[0].Count != 2 || cs[0].LastDelivery != "d3/old" {
				t.Fatalf("the recorded conflicts: %+v, want i1@v1 refused twice, last by d3/old", cs)
			}

			// Negative controls: a new version, a draft naming no item, and
			// a replay of an accepted delivery ID are not conflicts.
			for _, tc := range []struct {
				name, delivery string
				body           itemBody
				added          bool
			}{
				{"i1 at a new version", "d4", one("i1", "v2", `{"a":1,"b":3}`), true},
				{"a draft naming no item", "d5", one("", "", `{"a":1,"b":3}`), true},
				{"a replay of d1 with other data", "d1", one("i1", "v1", `{"a":9}`), false},
			} {
				res, err := way.push(r, tc.delivery, tc.body)
				if err != nil || len(res) != 1 || res[0].Added != tc.added {
					t.Fatalf("%s: %+v, %v; want accepted, added %v", tc.name, res, err, tc.added)
				}
			}
			r.wantEvents("after the controls", 3)
		})
	}
}

func TestPushedItemVersionNeedsBothAndAnItemWithoutAt(t *testing.T) {
	for _, way := range pushWays {
		for _, tc := range []struct {
			name string
			body itemBody
		}{
			{"an item without a version", one("i1", "", `{}`)},
			{"a version without an item", one("", "v1", `{}`)},
			{"an item holding @", one("i@1", "v1", `{}`)},
		} {
			t.Run(way.name+"/"+tc.name, func(t *testing.T) {
				r := newBindRig(t)
				_, err := way.push(r, "d1", tc.body)
				wantCode(t, tc.name, err, protocol.ErrInvalid)
				r.wantEvents("after a refused draft", 0)
			})
		}
	}
}

func TestPushThenReconcileOfTheSameItemVersionIsOneEvent(t *testing.T) {
	for _, way := range pushWays {
		t.Run(way.name, func(t *testing.T) {
			r := newBindRig(t)
			if _, err := way.push(r, "d1", one("i1", "v1", `{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			rep, err := r.scan(item("i1", "v1", `{"n":1}`), item("i2", "v1", `{"n":2}`))
			if err != nil || !rep.Complete || rep.Added != 1 {
				t.Fatalf("a scan seeing the pushed i1@v1 and a new i2@v1: %+v, %v; want complete, 1 added", rep, err)
			}
			evs := r.events()
			if len(evs) != 2 || evs[0].DeliveryID != "d1" || evs[1].DeliveryID != "i2@v1" {
				t.Fatalf("the log after the push and the scan: %+v", evs)
			}
			// The scan agrees on the envelope: the pushed item with other
			// data is the page's conflict, and the checkpoint stays.
			rep, err = r.scan(item("i1", "v1", `{"n":5}`), item("i3", "v1", `{}`))
			wantCode(t, "a scan seeing the pushed i1@v1 changed", err, protocol.ErrConflict)
			if rep.Complete || rep.Added != 0 {
				t.Fatalf("the conflicting scan: %+v", rep)
			}
			r.wantEvents("after the conflicting scan", 2)
		})
	}
}

func TestReconcileThenConflictingPushIsRefused(t *testing.T) {
	for _, way := range pushWays {
		t.Run(way.name, func(t *testing.T) {
			r := newBindRig(t)
			rep, err := r.scan(item("i1", "v1", `{"n":1}`))
			if err != nil || rep.Added != 1 {
				t.Fatalf("the scan: %+v, %v", rep, err)
			}
			scanned := r.events()[0].ID
			_, err = way.push(r, "d1", one("i1", "v1", `{"n":2}`))
			wantCode(t, "a push of the scanned i1@v1 with other data", err, protocol.ErrConflict)
			r.wantEvents("after the refused push", 1)
			// Negative control: the same envelope pushed is the scanned Event.
			res, err := way.push(r, "d2", one("i1", "v1", `{"n":1}`))
			if err != nil || len(res) != 1 || res[0].Added || res[0].EventID != scanned {
				t.Fatalf("a push of the scanned i1@v1 as it was: %+v, %v; want event %s, not added", res, err, scanned)
			}
			r.wantEvents("after the agreeing push", 1)
		})
	}
}
