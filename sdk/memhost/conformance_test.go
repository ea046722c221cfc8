package memhost_test

import (
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
)

// memHost serves the suite's extension from a fresh in-memory host, set up
// as s says.
func memHost(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	h := hostsuite.MemHost(tb, s)
	return hostsuite.Served{Table: h.Table(), Gate: h.Gate}
}

// TestMemhostAnswersAsTheHostSuiteRequires runs the host suite, the same
// table of checks the daemon's service passes, against the in-memory host.
func TestMemhostAnswersAsTheHostSuiteRequires(t *testing.T) {
	hostsuite.Run(t, hostsuite.HostFunc(memHost))
}
