package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestEventsShowSaysWhoRenderedTheEventOrWhyNobodyDid: the Event's fields,
// its route and its rendering are shown, and a generic rendering says why
// in place of a package's name.
func TestEventsShowSaysWhoRenderedTheEventOrWhyNobodyDid(t *testing.T) {
	ev := protocol.Event{ID: "e_1", Sequence: 9, Scope: "acme", Source: "webhook/acme/issues", Type: "webhook.received",
		DeliveryID: "d-1", Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Payload: protocol.Payload{Schema: "webhook.received.v1"}}
	routed := client.RouteDecision{State: client.RouteRouted, Work: "w_1", Created: true, Reasons: []client.RouteReason{{Handler: "webhook", Match: true}}}
	cases := []struct {
		name    string
		v       client.EventRender
		want    []string
		notWant []string
	}{
		{"rendered by its owner",
			client.EventRender{Event: ev, Route: routed, Work: "w_1", Text: "**The export fails**\n", RenderedBy: "webhook"},
			[]string{"e_1", "acme", "webhook/acme/issues", "webhook.received", "d-1", "webhook.received.v1",
				"routed by route 0 (webhook): created w_1", "rendered by webhook", "\n**The export fails**\n"},
			[]string{"generic"}},
		{"rendered generically, saying why",
			client.EventRender{Event: ev, Route: client.RouteDecision{State: client.RoutePending}, Text: "manual.request from operator",
				RenderedBy: client.RenderedGeneric, Fallback: `no package declares family "manual.request"`},
			[]string{`rendered generically: no package declares family "manual.request"`, "pending: the router has not decided yet", "manual.request from operator"},
			[]string{"rendered by"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeEventShow(&b, tc.v); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
