package daemon_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// routedConfig is daemontest.Config with a manual route in alpha.
var routedConfig = strings.Replace(daemontest.Config,
	`"connections": ["api1"]},`, `"connections": ["api1"], "routes": [{"handler": "manual"}]},`, 1)

// TestServeRoutesAcceptedEvents: the daemon runs the router, so an Event a
// package accepts gets a route decision with each route's reason, and an
// Event of a scope without routes says so.
func TestServeRoutesAcceptedEvents(t *testing.T) {
	if routedConfig == daemontest.Config {
		t.Fatal("the test config has no route")
	}
	e := daemontest.New(t, bins)
	e.WriteConfig(routedConfig)
	e.Start()
	own := e.HostCall("", "kv.commit", protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "d1", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	if own.Code != "" {
		t.Fatalf("emission: %+v", own)
	}
	id := digest.EmittedEventID("probe", "d1")
	// The daemon holds the store, so its decision is read after it stops;
	// the log's cursor tells when the router took the Event.
	var d pebblekv.RouteDecision
	e.Eventually("the event routed", func() bool {
		e.Stop()
		db, err := pebblekv.Open(filepath.Join(e.State, "store"), &pebblekv.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		err = db.View(func(r *pebblekv.Reader) (err error) {
			d, found, err = r.RouteDecision(id)
			return err
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The router records an Event pending as it takes it from the log,
		// then decides it.
		decided := found && d.State != pebblekv.RoutePending
		if !decided {
			e.Start()
		}
		return decided
	})
	if d.State != pebblekv.RouteUnmatched || len(d.Reasons) != 1 || d.Reasons[0].Handler != "manual" ||
		!strings.Contains(d.Reasons[0].Reason, "manual.request") {
		t.Fatalf("decision %+v", d)
	}
}
