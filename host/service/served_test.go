package service_test

import (
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestCatalogueSaysWhatTheServiceServes keeps the catalogue's Served flag
// (and so docs/protocol.md) true to the service: every E→H method the
// service handles is marked served, and none it does not.
func TestCatalogueSaysWhatTheServiceServes(t *testing.T) {
	served := service.Served()
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
