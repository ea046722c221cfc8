package memhost_test

import (
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// memHost serves the suite's extension from a fresh in-memory host.
func memHost(_ testing.TB, m *protocol.Manifest, scopes []string) hostsuite.Served {
	h := memhost.New(m.Name, memhost.WithManifest(m), memhost.WithScopes(scopes...))
	return hostsuite.Served{Table: h.Table(), Gate: h.Gate}
}

// TestMemhostAnswersAsTheHostSuiteRequires runs the host suite, the same
// table of checks the daemon's service passes, against the in-memory host.
func TestMemhostAnswersAsTheHostSuiteRequires(t *testing.T) {
	hostsuite.Run(t, hostsuite.HostFunc(memHost))
}
