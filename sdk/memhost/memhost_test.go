package memhost_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// TestMemhostServesOnlyExtensionToHostMethodsThroughDescriptors: what the
// in-memory host registers is catalogued E→H, each with a descriptor.
func TestMemhostServesOnlyExtensionToHostMethodsThroughDescriptors(t *testing.T) {
	described := map[string]bool{}
	for _, d := range protocol.Descriptors() {
		described[d.Name] = true
	}
	methods := memhost.New("acme").Table().Methods()
	if !slices.Contains(methods, protocol.MethodKVCommit) {
		t.Fatalf("the in-memory host does not serve kv.commit: %v", methods)
	}
	for _, name := range methods {
		def, ok := protocol.Lookup(name)
		if !ok || def.Direction != protocol.ExtensionToHost {
			t.Errorf("the in-memory host serves %s, which is not a catalogued E→H method", name)
		}
		if !described[name] {
			t.Errorf("the in-memory host serves %s, which has no descriptor", name)
		}
	}
}

// TestMemhostGateAnswersAsTheDaemon pins the answers that differed before
// the in-memory host used the daemon's callback rules.
func TestMemhostGateAnswersAsTheDaemon(t *testing.T) {
	h := memhost.New("acme")
	cases := []struct {
		method string
		want   *protocol.Error
	}{
		{protocol.MethodStateWork, protocol.ErrUnsupported},
		{protocol.MethodArtifactCreate, nil},
		{protocol.MethodStateTimers, protocol.ErrUnsupported},
		{protocol.MethodStateEvents, nil},
		{protocol.MethodRouteMatch, protocol.ErrMethodNotFound},
		{"no.such.method", protocol.ErrMethodNotFound},
		{protocol.MethodWorkCancel, protocol.ErrUndeclared},
		{protocol.MethodKVGet, nil},
	}
	for _, tc := range cases {
		err := h.Gate(context.Background(), tc.method)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: gate answered %v, want %v", tc.method, err, tc.want)
		}
	}
}

func TestMemhostNewRefusesAManifestOfAnotherName(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic")
		}
	}()
	memhost.New("acme", memhost.WithManifest(&protocol.Manifest{Name: "other"}))
}

// TestMemhostServesWhatTheCatalogueMarksServed: the in-memory host serves
// exactly the extension-to-host methods the daemon serves (the catalogue's
// Served flag, which the daemon's own test ties to its service), artifact.*
// among them.
func TestMemhostServesWhatTheCatalogueMarksServed(t *testing.T) {
	var served, unserved []string
	for _, m := range protocol.Catalogue() {
		if m.Direction != protocol.ExtensionToHost {
			continue
		}
		if m.Served {
			served = append(served, m.Name)
		} else {
			unserved = append(unserved, m.Name)
		}
	}
	plain := memhost.New("acme").Table()
	for _, name := range served {
		if !plain.Has(name) {
			t.Errorf("the daemon serves %s; the in-memory host does not", name)
		}
	}
	for _, name := range unserved {
		if plain.Has(name) {
			t.Errorf("the daemon answers %s unsupported; the in-memory host serves it", name)
		}
	}
	// Negative control: the daemon leaves some methods unserved, and the
	// loop above saw them.
	if !slices.Contains(unserved, protocol.MethodStateTimers) || !slices.Contains(served, protocol.MethodArtifactCreate) {
		t.Fatalf("state.timers unserved %v, artifact.create served %v; want both", slices.Contains(unserved, protocol.MethodStateTimers), slices.Contains(served, protocol.MethodArtifactCreate))
	}
}
