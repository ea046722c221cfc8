package jsonrpc

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// TestServeAndInvokeShareTheDescriptor: a handler registered through a
// descriptor answers a call invoked through it, typed on both sides, over
// real pipes; its refusals keep their codes, and an answer to another
// method's descriptor is never decoded as this one's.
func TestServeAndInvokeShareTheDescriptor(t *testing.T) {
	table := NewTable()
	Serve(table, protocol.KVGet, func(_ context.Context, p protocol.KVGetParams) (protocol.KVGetResult, error) {
		if p.Namespace != "acme" {
			return protocol.KVGetResult{}, protocol.Errorf(protocol.ErrUnauthorized, "namespace %q is not acme's", p.Namespace)
		}
		return protocol.KVGetResult{Found: true, Value: []byte(p.Key), Version: digest.KVVersion([]byte(p.Key))}, nil
	})
	if !table.Has(protocol.MethodKVGet) || table.Has(protocol.MethodKVList) {
		t.Fatalf("table methods %v", table.Methods())
	}
	_, ext := connPair(t, Options{Handlers: table}, Options{})
	ctx := context.Background()
	cases := []struct {
		name    string
		params  protocol.KVGetParams
		want    protocol.KVGetResult
		wantErr *protocol.Error
	}{
		{"typed answer", protocol.KVGetParams{Namespace: "acme", Key: "k"},
			protocol.KVGetResult{Found: true, Value: []byte("k"), Version: digest.KVVersion([]byte("k"))}, nil},
		{"authored refusal", protocol.KVGetParams{Namespace: "other", Key: "k"}, protocol.KVGetResult{}, protocol.ErrUnauthorized},
	}
	for _, tc := range cases {
		got, err := Invoke(ctx, ext, protocol.KVGet, tc.params)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.wantErr.Code)
			}
		} else if err != nil || got.Found != tc.want.Found || string(got.Value) != string(tc.want.Value) || got.Version != tc.want.Version {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
	// Negative control: a descriptor the peer does not serve is
	// method_not_found, and its zero result is returned.
	res, err := Invoke(ctx, ext, protocol.KVList, protocol.KVListParams{Namespace: "acme"})
	if !errors.Is(err, protocol.ErrMethodNotFound) || res.Items != nil {
		t.Fatalf("an unserved descriptor: %+v %v", res, err)
	}
}

// TestLayerServesTopThenUnder: a layered table answers a method from its
// top layer when it has one and from the layer under it otherwise, over
// real pipes; it lists both layers' methods once each, refuses
// registration, and a method neither layer serves is method_not_found.
func TestLayerServesTopThenUnder(t *testing.T) {
	answer := func(s string) HandlerFunc {
		return func(context.Context, jsontext.Value) (any, error) { return s, nil }
	}
	top, under := NewTable(), NewTable()
	top.HandleRaw("both", answer("top"))
	top.HandleRaw("top.only", answer("top"))
	under.HandleRaw("both", answer("under"))
	under.HandleRaw("under.only", answer("under"))
	layered := Layer(top, under)
	if got, want := layered.Methods(), []string{"both", "top.only", "under.only"}; !slices.Equal(got, want) {
		t.Fatalf("methods %v, want %v", got, want)
	}
	if !layered.Has("under.only") || layered.Has("neither") {
		t.Fatal("Has does not see through the layers")
	}
	_, ext := connPair(t, Options{Handlers: layered}, Options{})
	ctx := context.Background()
	for method, want := range map[string]string{"both": "top", "top.only": "top", "under.only": "under"} {
		var got string
		if err := ext.Call(ctx, method, nil, &got); err != nil || got != want {
			t.Errorf("%s answered %q %v, want %q", method, got, err, want)
		}
	}
	if err := ext.Call(ctx, "neither", nil, nil); !errors.Is(err, protocol.ErrMethodNotFound) {
		t.Errorf("a method no layer serves: %v, want method_not_found", err)
	}
	// A layered table laid over another keeps every layer, in order.
	newTop := NewTable()
	newTop.HandleRaw("new.only", answer("new"))
	three := Layer(newTop, Layer(layered, NewTable()))
	for method, want := range map[string]string{"new.only": "new", "both": "top", "under.only": "under"} {
		h, ok := three.Lookup(method)
		if !ok {
			t.Errorf("layered twice: %s is not served", method)
			continue
		}
		if got, _ := h(ctx, nil); got != want {
			t.Errorf("layered twice: %s answered %v, want %q", method, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("registering on a layered table did not panic")
		}
	}()
	layered.HandleRaw("late", answer("late"))
}
