package memhost_test

import (
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// memHost serves the suite's extension from a fresh in-memory host, set up
// as s says.
func memHost(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	opts := []memhost.Option{memhost.WithManifest(s.Manifest)}
	for scope, secrets := range s.Secrets {
		opts = append(opts, memhost.WithSecrets(scope, secrets))
	}
	h := memhost.New(s.Manifest.Name, opts...)
	if err := h.Configure(protocol.ConfigureParams{Entries: s.Entries}); err != nil {
		tb.Fatal(err)
	}
	for _, e := range s.Events {
		if _, _, err := h.Accept(e); err != nil {
			tb.Fatal(err)
		}
	}
	return hostsuite.Served{Table: h.Table(), Gate: h.Gate}
}

// TestMemhostAnswersAsTheHostSuiteRequires runs the host suite, the same
// table of checks the daemon's service passes, against the in-memory host.
func TestMemhostAnswersAsTheHostSuiteRequires(t *testing.T) {
	hostsuite.Run(t, hostsuite.HostFunc(memHost))
}
