package daemon

import (
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestRenderAsksOnlyARunningOwnerThatReadsThePayload: the family's owner is
// asked only when it declares render, runs, and reads the payload's schema
// (the host's gate: a retired, newer or undeclared own schema is never
// sent); every other case names the reason the rendering is generic.
func TestRenderAsksOnlyARunningOwnerThatReadsThePayload(t *testing.T) {
	notes := func(render bool, versions ...int) *protocol.Manifest {
		m := &protocol.Manifest{Name: "notes", Protocol: []int{1}, Command: []string{"notes-extension"}}
		m.Provides.Families = []protocol.Family{{Name: "notes.added", Rederivable: true}}
		m.Provides.Schemas = []protocol.Schema{{Base: "notes.added", Versions: versions}}
		m.Provides.Render = render
		return m
	}
	other := &protocol.Manifest{Name: "other", Protocol: []int{1}, Command: []string{"other-extension"}}
	other.Provides.Render = true
	ev := func(typ, schema string) protocol.Event {
		return protocol.Event{ID: "e1", Type: typ, Payload: protocol.Payload{Schema: schema}}
	}
	cases := []struct {
		name  string
		cands []renderCandidate
		ev    protocol.Event
		owner string
		why   string
	}{
		{"the owner reads the current schema", []renderCandidate{{other, true}, {notes(true, 1, 2), true}}, ev("notes.added", "notes.added.v2"), "notes", ""},
		{"an older version it still reads is upcast", []renderCandidate{{notes(true, 1, 2), true}}, ev("notes.added", "notes.added.v1"), "notes", ""},
		{"no schema is foreign, passed verbatim", []renderCandidate{{notes(true, 1), true}}, ev("notes.added", ""), "notes", ""},
		{"a retired schema is not sent", []renderCandidate{{notes(true, 2, 3), true}}, ev("notes.added", "notes.added.v1"), "", `does not read payload schema "notes.added.v1" (retired)`},
		{"a newer schema is not sent", []renderCandidate{{notes(true, 1), true}}, ev("notes.added", "notes.added.v2"), "", "(newer)"},
		{"an undeclared own schema is not sent", []renderCandidate{{notes(true, 1), true}}, ev("notes.added", "notes.other.v1"), "", "(undeclared)"},
		{"the owner does not declare render", []renderCandidate{{other, true}, {notes(false, 1), true}}, ev("notes.added", "notes.added.v1"), "", "does not render its Events"},
		{"the owner is not running", []renderCandidate{{notes(true, 1), false}}, ev("notes.added", "notes.added.v1"), "", "notes owns family \"notes.added\" but is not running"},
		{"nobody owns the family", []renderCandidate{{other, true}, {notes(true, 1), true}}, ev("manual.request", "manual.request.v1"), "", `no package declares family "manual.request"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner, why := planRender(tc.cands, tc.ev)
			if owner != tc.owner || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Fatalf("owner %q why %q; want owner %q why containing %q", owner, why, tc.owner, tc.why)
			}
		})
	}
}
