package hostsuite

import (
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// MemHost is the in-memory host set up as s describes (its manifest, the
// scopes' secrets, the entries of a first configure, the seeded Events and
// Work), with opts after those: the host the suite's memhost runs and its
// own tests' weakened hosts start from.
func MemHost(tb testing.TB, s Setup, opts ...memhost.Option) *memhost.Host {
	tb.Helper()
	opts = append([]memhost.Option{memhost.WithManifest(s.Manifest)}, opts...)
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
	for _, w := range s.Works {
		h.PutWork(w)
	}
	return h
}
