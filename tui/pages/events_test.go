package pages

import (
	"context"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/tui/common"
	"github.com/open-conduit/open-conduit/tui/keymap"
	"github.com/open-conduit/open-conduit/tui/styles"
)

func TestEventsReadDecisionsOnlyWhileOneIsPending(t *testing.T) {
	c := &common.Common{Ctx: context.Background(), Width: 80, Height: 24, Styles: styles.New(false), Keys: keymap.Default(), Now: time.Now}
	p := NewEvents(c)
	p.Update(common.EventsMsg{Events: []protocol.Event{
		{ID: "E1", Sequence: 1, Scope: "ops"},
		{ID: "E2", Sequence: 2},
		{ID: "E3", Sequence: 3, Scope: "ops", Works: []string{"W1"}},
	}, Routes: map[string]client.EventRoute{"E1": {State: client.RouteUnmatched}}})
	if cmd := p.Update(common.Snapshot{}); cmd != nil {
		t.Fatal("a change read the decisions with none pending")
	}
	p.Update(common.EventsMsg{Events: []protocol.Event{{ID: "E4", Sequence: 4, Scope: "ops"}}})
	if cmd := p.Update(common.Snapshot{}); cmd == nil {
		t.Fatal("a change did not read the decision of an Event still pending")
	}
	if cmd := p.Update(common.Snapshot{}); cmd != nil {
		t.Fatal("a second read started while one is out")
	}
	p.Update(routesMsg{routes: map[string]client.EventRoute{"E4": {State: client.RouteRouted, Work: "W2"}}})
	if cmd := p.Update(common.Snapshot{}); cmd != nil {
		t.Fatal("a change read the decisions again after the last pending one was decided")
	}
	if got := p.routedTo(p.events[3]); got != "W2" {
		t.Fatalf("E4 routed to %q, want W2", got)
	}
}
