package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// emitter is an extension whose operation commits one batch: a put and an
// emission of its family into the scope it is given.
func emitter(result *protocol.KVCommitResult) *sdk.Extension {
	type in struct {
		Scope    string `json:"scope"`
		Delivery string `json:"delivery"`
		Type     string `json:"type"`
	}
	return sdk.New("notes").
		Family("notes.changed", sdk.Rederivable()).
		Schema("notes.changed", 1).
		Operation("notes.emit", sdk.Handler(func(ctx context.Context, r *sdk.Request, p in) (struct{}, error) {
			b := sdk.NewBatch().Put("notes", "last", []byte(p.Delivery)).Emit(protocol.Emission{
				Scope: p.Scope, Source: "notes/web", DeliveryID: p.Delivery, Type: p.Type,
				Payload: protocol.Payload{Schema: "notes.changed.v1", Data: []byte(`{}`)},
			})
			res, err := r.Host.Commit(ctx, b)
			*result = res
			return struct{}{}, err
		}))
}

// TestSdktestAcceptsEmissionsAsTheDaemonDoes: the in-memory host accepts a
// kv.commit emission the daemon accepts (it once refused every emission
// unsupported), dedupes a repeat, and refuses what the daemon refuses,
// applying nothing.
func TestSdktestAcceptsEmissionsAsTheDaemonDoes(t *testing.T) {
	var res protocol.KVCommitResult
	h := sdktest.New(t, emitter(&res), sdktest.WithScopes("s1"))
	ctx := context.Background()
	emit := func(scope, delivery, typ string) error {
		_, err := sdktest.Call[struct{}](ctx, h, "notes.emit", map[string]any{"scope": scope, "delivery": delivery, "type": typ})
		return err
	}
	cases := []struct {
		name, scope, delivery, typ string
		want                       *protocol.Error
		added                      bool
	}{
		{"new", "s1", "d1", "notes.changed", nil, true},
		{"a repeat is the same Event, not new", "s1", "d1", "notes.changed", nil, false},
		{"an unconfigured scope", "s2", "d2", "notes.changed", protocol.ErrNotFound, false},
		{"an undeclared family", "s1", "d3", "notes.other", protocol.ErrUndeclared, false},
	}
	for _, tc := range cases {
		res = protocol.KVCommitResult{}
		err := emit(tc.scope, tc.delivery, tc.typ)
		if tc.want != nil {
			if !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.want.Code)
			}
			if got := string(h.Host().KV("notes")["last"]); got == tc.delivery {
				t.Errorf("%s: the refused batch's put applied", tc.name)
			}
			continue
		}
		want := protocol.EmissionResult{EventID: digest.EmittedEventID("notes/web", tc.delivery), Added: tc.added}
		if err != nil || len(res.Emissions) != 1 || res.Emissions[0] != want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, res.Emissions, err, want)
		}
	}
	if evs := h.Host().Events(); len(evs) != 1 || evs[0].Scope != "s1" || evs[0].Sequence != 1 {
		t.Fatalf("the in-memory log holds %+v, want the one Event in s1", evs)
	}
}

// TestSdktestAnswersCallbacksAsTheDaemonDoes: a callback the in-memory host
// does not serve is unsupported, a host-to-extension method is
// method_not_found, and a method the manifest does not enable is
// undeclared, as the daemon answers them.
func TestSdktestAnswersCallbacksAsTheDaemonDoes(t *testing.T) {
	cases := []struct {
		method string
		want   *protocol.Error
	}{
		{protocol.MethodStateWork, protocol.ErrUnsupported},
		{protocol.MethodRouteMatch, protocol.ErrMethodNotFound},
		{"no.such.method", protocol.ErrMethodNotFound},
		{protocol.MethodProbeList, protocol.ErrUndeclared},
		{protocol.MethodKVGet, nil},
	}
	got := map[string]error{}
	x := sdk.New("notes").Operation("notes.call", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (struct{}, error) {
		for _, tc := range cases {
			got[tc.method] = r.Host.Call(ctx, tc.method, protocol.KVGetParams{Namespace: "notes"}, nil)
		}
		return struct{}{}, nil
	}))
	h := sdktest.New(t, x)
	if _, err := sdktest.Call[struct{}](context.Background(), h, "notes.call", struct{}{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		err := got[tc.method]
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.method, err, fmt.Sprint(tc.want))
		}
	}
}
