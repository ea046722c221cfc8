package service_test

import (
	"context"
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/protocol"
)

// daemonHost serves the suite's extension as the daemon does: its service
// over a real Pebble store in a temporary directory, configured so exactly
// scopes use it, behind the callback rules the session applies.
func daemonHost(tb testing.TB, m *protocol.Manifest, scopes []string) hostsuite.Served {
	db := openDB(tb, tb.TempDir(), false)
	tb.Cleanup(func() { db.Close() })
	cfg := &config.Config{Scopes: []config.Scope{{ID: "unused"}}}
	for _, id := range scopes {
		cfg.Scopes = append(cfg.Scopes, config.Scope{ID: id, Entries: []config.Entry{{Name: "feed", Type: m.Provides.Extensions[0].Type}}})
	}
	gen := &config.Generation{Config: cfg, Dir: tb.TempDir()}
	table := service.New(m, service.Deps{DB: db, Generation: func() *config.Generation { return gen }}).Table()
	return hostsuite.Served{
		Table: table,
		Gate: func(_ context.Context, method string) error {
			return protocol.CheckCallback(m, method, table.Has, false)
		},
	}
}

// TestServiceAnswersAsTheHostSuiteRequires runs the host suite, the same
// table of checks the in-memory host passes, against the daemon's service
// and store.
func TestServiceAnswersAsTheHostSuiteRequires(t *testing.T) {
	hostsuite.Run(t, hostsuite.HostFunc(daemonHost))
}
