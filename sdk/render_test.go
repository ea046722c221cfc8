package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// renderer owns notes.added and renders it from its data; the data "fail"
// is an error and "huge" a text over the bound.
func renderer() *sdk.Extension {
	return sdk.New("notes").
		Family("notes.added", sdk.Rederivable()).
		Render(func(_ context.Context, _ *sdk.Request, p sdk.EventRenderParams) (string, error) {
			switch data := string(p.Event.Payload.Data); data {
			case `"fail"`:
				return "", sdk.Errorf(sdk.ErrInvalid, "cannot render %s", p.Event.ID)
			case `"huge"`:
				return strings.Repeat("x", sdk.RenderMaxText+1), nil
			default:
				work := "no Work"
				if p.Work != nil {
					work = p.Work.ID
				}
				return "**note** " + data + " for " + work, nil
			}
		})
}

// TestRenderDeclaresRenderAndServesOnlyOwnFamilies: Render declares the
// surface, answers event.render over a real connection for an Event of the
// extension's own family (with the Work it is rendered for), and refuses an
// Event of a family it does not declare, an error of its own and a text over
// the bound with their codes.
func TestRenderDeclaresRenderAndServesOnlyOwnFamilies(t *testing.T) {
	x := renderer()
	if !x.Manifest.Provides.Render || !x.Manifest.Enabled(protocol.MethodEventRender) {
		t.Fatalf("Render did not declare render: %+v", x.Manifest.Provides)
	}
	h := sdktest.New(t, x)
	ctx := context.Background()

	text, err := h.Render(ctx, sdk.Event{ID: "e1", Type: "notes.added", Payload: sdk.Payload{Data: []byte(`"buy milk"`)}})
	if err != nil || text != `**note** "buy milk" for no Work` {
		t.Fatalf("an own Event: %q, %v", text, err)
	}
	var res protocol.EventRenderResult
	err = h.Raw(ctx, protocol.MethodEventRender, sdk.EventRenderParams{
		Event: sdk.Event{ID: "e2", Type: "notes.added", Payload: sdk.Payload{Data: []byte(`1`)}},
		Work:  &sdk.WorkView{ID: "w_7"},
	}, &res)
	if err != nil || res.Text != "**note** 1 for w_7" {
		t.Fatalf("an own Event for a Work: %+v, %v", res, err)
	}

	cases := []struct {
		name string
		ev   sdk.Event
		want error
	}{
		{"a family it does not own", sdk.Event{ID: "e3", Type: "manual.request"}, sdk.ErrUndeclared},
		{"a family sharing its namespace but undeclared", sdk.Event{ID: "e4", Type: "notes.removed"}, sdk.ErrUndeclared},
		{"its own error", sdk.Event{ID: "e5", Type: "notes.added", Payload: sdk.Payload{Data: []byte(`"fail"`)}}, sdk.ErrInvalid},
		{"a text over the bound", sdk.Event{ID: "e6", Type: "notes.added", Payload: sdk.Payload{Data: []byte(`"huge"`)}}, protocol.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, err := h.Render(ctx, tc.ev)
			if !errors.Is(err, tc.want) || text != "" {
				t.Fatalf("%q, %v; want %v", text, err, tc.want)
			}
		})
	}
	if err := h.Raw(ctx, protocol.MethodEventRender, map[string]any{"event": 7}, &res); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("params of the wrong shape: %v, want invalid_params", err)
	}
}

// TestRenderTwicePanics: a second registration is a programming error.
func TestRenderTwicePanics(t *testing.T) {
	fn := func(context.Context, *sdk.Request, sdk.EventRenderParams) (string, error) { return "", nil }
	defer func() {
		if recover() == nil {
			t.Fatal("a second Render did not panic")
		}
	}()
	sdk.New("twice").Family("twice.x", sdk.Rederivable()).Render(fn).Render(fn)
}
