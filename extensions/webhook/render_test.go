package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// received is a webhook.received Event with data.
func received(id, data string) sdk.Event {
	return sdk.Event{ID: id, Scope: "acme", Type: webhook.Received, Source: "webhook/acme/issues", DeliveryID: "d-" + id,
		Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Payload: sdk.Payload{Schema: webhook.ReceivedSchema, Data: []byte(data)}}
}

// TestRenderShowsTitleKeyAndTheBodyBounded: a delivery renders with its
// title (or its key when it has none), key, delivery and source, and its
// body indented; a body over the bound is cut and counted, and the text
// stays within the protocol's bound; a payload with no key and another
// package's family are refused.
func TestRenderShowsTitleKeyAndTheBodyBounded(t *testing.T) {
	if !webhook.Extension().Manifest.Provides.Render {
		t.Fatal("webhook does not declare render")
	}
	h := sdktest.New(t, webhook.Extension())
	ctx := context.Background()
	long, _ := json.Marshal(map[string]any{"key": "9", "body": map[string]string{"text": strings.Repeat("ü", webhook.MaxRenderedBody)}})
	for _, tc := range []struct {
		name    string
		ev      sdk.Event
		want    []string
		notWant []string
	}{
		{"a titled delivery", received("e1", `{"key":"136","title":"The export fails","body":{"issue":{"id":136}}}`),
			[]string{"**The export fails**", "- key: 136", "- delivery: d-e1", "- source: webhook/acme/issues", "\"issue\": {\n    \"id\": 136"},
			[]string{"not shown"}},
		{"an untitled delivery is named by its key", received("e2", `{"key":"7","body":{}}`),
			[]string{"**webhook 7**", "- key: 7"}, nil},
		{"a body over the bound is cut and counted", received("e3", string(long)),
			[]string{"**webhook 9**", "more bytes not shown"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := h.Render(ctx, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%.600s", w, text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("has %q:\n%.600s", w, text)
				}
			}
			if len(text) > protocol.RenderMaxText {
				t.Errorf("%d bytes, over the protocol's %d", len(text), protocol.RenderMaxText)
			}
		})
	}
	for _, tc := range []struct {
		name string
		ev   sdk.Event
		want error
	}{
		{"a payload with no key", received("e4", `{"body":{}}`), sdk.ErrInvalid},
		{"another package's family", sdk.Event{ID: "e5", Type: "manual.request", Payload: sdk.Payload{Data: []byte(`{"key":"1"}`)}}, protocol.ErrUndeclared},
	} {
		if _, err := h.Render(ctx, tc.ev); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
