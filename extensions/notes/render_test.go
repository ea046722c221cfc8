package notes_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// TestRenderShowsANoteQuotedAndADigestsDueTime: each of the package's
// families renders with what a reader needs; a payload it cannot read and
// another package's family are refused, so the host renders those
// generically.
func TestRenderShowsANoteQuotedAndADigestsDueTime(t *testing.T) {
	h := sdktest.New(t, notes.Extension())
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ev   sdk.Event
		want []string
		err  *protocol.Error
	}{
		{"a note", sdk.Event{ID: "e1", Type: notes.Added, Payload: protocol.Payload{Schema: notes.AddedSchema,
			Data: jsontext.Value(`{"id":"n1","thread":"release","text":"ship it\nfriday"}`)}},
			[]string{"**Note n1 on thread release**", "> ship it\n> friday\n"}, nil},
		{"a digest", sdk.Event{ID: "e2", Type: notes.Digest, Payload: protocol.Payload{Schema: notes.DigestSchema,
			Data: jsontext.Value(`{"entry":"team","scheduled_at":"2026-11-30T09:00:00Z"}`)}},
			[]string{"Digest of notes entry team", "due 2026-11-30T09:00:00Z"}, nil},
		{"a note without its thread", sdk.Event{ID: "e3", Type: notes.Added, Payload: protocol.Payload{Schema: notes.AddedSchema,
			Data: jsontext.Value(`{"id":"n1"}`)}}, nil, protocol.ErrInvalid},
		{"another package's family", sdk.Event{ID: "e4", Type: "webhook.received"}, nil, protocol.ErrUndeclared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := h.Render(ctx, tc.ev)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("render: %q, %v; want %v", text, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("rendering %q lacks %q", text, w)
				}
			}
		})
	}
}
