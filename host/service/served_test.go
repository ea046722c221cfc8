package service_test

import (
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/protocol"
)

// served is what the service's table really registers.
func served() []string {
	return service.New(probe.Extension().Manifest, service.Deps{}).Table().Methods()
}

// TestCatalogueSaysWhatTheServiceServes keeps the catalogue's Served flag
// (and so docs/protocol.md) true to the service: every E→H method the
// service's table registers is marked served, and none it does not.
func TestCatalogueSaysWhatTheServiceServes(t *testing.T) {
	served := served()
	for _, m := range protocol.Catalogue() {
		if m.Direction != protocol.ExtensionToHost {
			continue
		}
		if got := slices.Contains(served, m.Name); got != m.Served {
			t.Errorf("%s: the service serves it: %v; the catalogue says %v", m.Name, got, m.Served)
		}
	}
	for _, name := range served {
		if def, ok := protocol.Lookup(name); !ok || def.Direction != protocol.ExtensionToHost {
			t.Errorf("the service serves %s, which is not a catalogued E→H method", name)
		}
	}
}

// TestServiceServesEveryMethodThroughItsDescriptor: each method the service
// registers has a descriptor, so its params and result types are the ones
// the extension side invokes it with.
func TestServiceServesEveryMethodThroughItsDescriptor(t *testing.T) {
	described := map[string]bool{}
	for _, d := range protocol.Descriptors() {
		described[d.Name] = true
	}
	got := served()
	if len(got) == 0 {
		t.Fatal("the service's table registers nothing")
	}
	for _, name := range got {
		if !described[name] {
			t.Errorf("the service serves %s, which has no descriptor", name)
		}
	}
	// Negative control: a name with no descriptor is caught.
	if described["state.work"] {
		t.Fatal("state.work has no wire types yet, so it must have no descriptor")
	}
}
