package daemon

import (
	"testing"

	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/protocol"
)

func TestIngressSourcesFollowEachPackagesLastConfigure(t *testing.T) {
	r := newIngressRoutes()
	var _ engine.ReconcileSources = r
	r.record("feed", protocol.ConfigureResult{Sources: []protocol.Source{{Name: "feed/a", Families: []string{"feed.item"}}}})
	r.record("other", protocol.ConfigureResult{Sources: []protocol.Source{{Name: "other"}}})
	r.record("feed", protocol.ConfigureResult{Sources: []protocol.Source{{Name: "feed/b", Families: []string{"feed.item"}}}})
	got := r.IngressSources()
	if len(got["feed"]) != 1 || got["feed"][0].Name != "feed/b" || got["feed"][0].Families[0] != "feed.item" {
		t.Fatalf("feed's sources %+v, want only feed/b from its last configure", got["feed"])
	}
	r.drop("other")
	if _, ok := r.IngressSources()["other"]; ok {
		t.Fatal("a dropped package's sources are still reconciled")
	}
	if _, ok := got["other"]; !ok {
		t.Fatal("a map handed out before the drop changed")
	}
}
