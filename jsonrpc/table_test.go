package jsonrpc

import (
	"context"
	"errors"
	"testing"

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
