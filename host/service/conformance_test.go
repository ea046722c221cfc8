package service_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/host/artifacts"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// daemonHost serves the suite's extension as the daemon does: its service
// over a real Pebble store and artifact store in a temporary directory, holding s's Events,
// and s's Work, configured so s's entries are the extension's (each selecting its scope's
// secrets, kept in files as an operator keeps them), behind the callback
// rules the session applies.
func daemonHost(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	db := openDB(tb, tb.TempDir(), false)
	tb.Cleanup(func() { db.Close() })
	gen := &config.Generation{Config: setupConfig(tb, s), Dir: tb.TempDir()}
	err := db.Update(func(tx *pebblekv.Tx) error {
		for _, e := range s.Events {
			in := pebblekv.EventInput{Scope: e.Scope, Source: e.Source, Type: e.Type, DeliveryID: e.DeliveryID, Parent: e.Parent, Payload: e.Payload}
			if _, _, err := tx.Accept(in, pebblekv.Limits{}); err != nil {
				return err
			}
		}
		for _, w := range s.Works {
			rec := pebblekv.Work{ID: w.ID, Scope: w.Scope, Kind: w.Kind, Keys: w.Keys, State: w.State}
			if err := tx.PutWork(rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	store, err := artifacts.Open(db, filepath.Join(tb.TempDir(), "artifacts"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	e := engine.New(engine.Deps{DB: db})
	table := service.New(s.Manifest, service.Deps{DB: db, Generation: func() *config.Generation { return gen },
		Artifacts: store, PersistRecovery: e.PersistRecovery, WaitProgress: e.WaitProgress}).Table()
	return hostsuite.Served{
		Table: table,
		Gate: func(_ context.Context, method string) error {
			return protocol.CheckCallback(s.Manifest, method, table.Has, false)
		},
	}
}

// setupConfig is the configuration s describes, with a scope that does
// not use the extension and, in every scope, a secret no entry selects.
func setupConfig(tb testing.TB, s hostsuite.Setup) *config.Config {
	dir := tb.TempDir()
	ref := func(scope, name, value string) string {
		path := filepath.Join(dir, scope+"-"+name)
		if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		return "file:" + path
	}
	cfg := &config.Config{Scopes: []config.Scope{{ID: "unused"}}}
	index := map[string]int{}
	for _, e := range s.Entries {
		i, ok := index[e.Scope]
		if !ok {
			i = len(cfg.Scopes)
			index[e.Scope] = i
			cfg.Scopes = append(cfg.Scopes, config.Scope{ID: e.Scope, SecretRefs: map[string]string{"unselected": ref(e.Scope, "unselected", "no")}})
		}
		sc := &cfg.Scopes[i]
		entry := config.Entry{Name: e.Name, Type: e.Type, Config: e.Config, Connection: e.Connection}
		for name, value := range s.Secrets[e.Scope] {
			if !slices.Contains(entry.Secrets, name) {
				sc.SecretRefs[name] = ref(e.Scope, name, value)
				entry.Secrets = append(entry.Secrets, name)
			}
		}
		sc.Entries = append(sc.Entries, entry)
	}
	return cfg
}

// TestServiceAnswersAsTheHostSuiteRequires runs the host suite, the same
// table of checks the in-memory host passes, against the daemon's service
// and store.
func TestServiceAnswersAsTheHostSuiteRequires(t *testing.T) {
	hostsuite.Run(t, hostsuite.HostFunc(daemonHost))
}
