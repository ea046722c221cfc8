package protocol

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestObservationEnvelopeIsCanonical(t *testing.T) {
	base := Observation{Item: "a", Version: "1", Scope: "s1", Payload: Payload{Schema: "f.v1", Data: jsontext.Value(`{"n":1,"m":[1,2]}`)}}
	want, err := ObservationEnvelope(base, "f")
	if err != nil {
		t.Fatal(err)
	}
	with := func(fn func(*Observation)) Observation {
		o := base
		fn(&o)
		return o
	}
	tests := []struct {
		name string
		o    Observation
		typ  string
		same bool
	}{
		{"keys reordered and spaced", with(func(o *Observation) { o.Payload.Data = jsontext.Value(` { "m" : [1, 2], "n": 1 }`) }), "f", true},
		{"another item and version (the identity is apart)", with(func(o *Observation) { o.Item, o.Version = "b", "2" }), "f", true},
		{"other data", with(func(o *Observation) { o.Payload.Data = jsontext.Value(`{"n":2,"m":[1,2]}`) }), "f", false},
		{"another scope", with(func(o *Observation) { o.Scope = "s2" }), "f", false},
		{"another schema", with(func(o *Observation) { o.Payload.Schema = "f.v2" }), "f", false},
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
	if _, err := ObservationEnvelope(with(func(o *Observation) { o.Payload.Data = jsontext.Value(`{`) }), "f"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("data that is not JSON: %v, want invalid", err)
	}
}

func TestObservationIdentityRefusesAmbiguousDeliveryIDs(t *testing.T) {
	tests := []struct {
		item, version string
		ok            bool
	}{
		{"a", "1", true},
		{"a", "1@2", true},
		{"a@1", "2", false},
		{"", "1", false},
		{"a", "", false},
	}
	for _, tt := range tests {
		err := CheckObservationIdentity(Observation{Item: tt.item, Version: tt.version})
		if (err == nil) != tt.ok {
			t.Errorf("item %q version %q: %v, want ok %v", tt.item, tt.version, err, tt.ok)
		}
	}
	if got := ObservationDeliveryID("a", "1@2"); got != "a@1@2" {
		t.Errorf("delivery ID %q", got)
	}
}
