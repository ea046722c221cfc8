package protocol

import "testing"

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
