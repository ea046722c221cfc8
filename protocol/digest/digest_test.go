package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestDigestsAreTheDocumentedSHA256Prefixes pins each digest to the
// formula docs/protocol.md gives an extension author in any language.
func TestDigestsAreTheDocumentedSHA256Prefixes(t *testing.T) {
	hexOf := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	tests := []struct{ name, got, want string }{
		{"kv version", KVVersion([]byte("v1")), hexOf([]byte("v1"))[:32]},
		{"kv version of nothing", KVVersion(nil), "e3b0c44298fc1c149afbf4c8996fb924"},
		{"emitted event id", EmittedEventID("acme/feed", "d-1"), "ev_" + hexOf([]byte("acme/feed\x00d-1"))[:32]},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	// protocol.KVItemSize counts 32 bytes for every version.
	if n := len(KVVersion([]byte("x"))); n != 32 {
		t.Errorf("a KV version is %d bytes; protocol's item sizes count 32", n)
	}
}

func TestObservationEnvelopeIsCanonical(t *testing.T) {
	base := protocol.Observation{Item: "a", Version: "1", Scope: "s1", Payload: protocol.Payload{Schema: "f.v1", Data: jsontext.Value(`{"n":1,"m":[1,2]}`)}}
	want, err := ObservationEnvelope(base, "f")
	if err != nil {
		t.Fatal(err)
	}
	with := func(fn func(*protocol.Observation)) protocol.Observation {
		o := base
		fn(&o)
		return o
	}
	tests := []struct {
		name string
		o    protocol.Observation
		typ  string
		same bool
	}{
		{"keys reordered and spaced", with(func(o *protocol.Observation) { o.Payload.Data = jsontext.Value(` { "m" : [1, 2], "n": 1 }`) }), "f", true},
		{"another item and version (the identity is apart)", with(func(o *protocol.Observation) { o.Item, o.Version = "b", "2" }), "f", true},
		{"other data", with(func(o *protocol.Observation) { o.Payload.Data = jsontext.Value(`{"n":2,"m":[1,2]}`) }), "f", false},
		{"another scope", with(func(o *protocol.Observation) { o.Scope = "s2" }), "f", false},
		{"another schema", with(func(o *protocol.Observation) { o.Payload.Schema = "f.v2" }), "f", false},
		{"another type", base, "g", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ObservationEnvelope(tt.o, tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tt.same {
				t.Fatalf("envelope %s vs %s: same %v, want %v", got, want, got == want, tt.same)
			}
		})
	}
	if _, err := ObservationEnvelope(with(func(o *protocol.Observation) { o.Payload.Data = jsontext.Value(`{`) }), "f"); !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("data that is not JSON: %v, want invalid", err)
	}
}
