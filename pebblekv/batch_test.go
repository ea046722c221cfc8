package pebblekv

import (
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestCommitBatchAppliesTheHostsRules: under a host's rules the store
// refuses an emission the manifest or the configuration does not allow,
// and applies nothing of its batch; under the store's own rules (CommitKV)
// the same batch applies, since the store knows no manifest.
func TestCommitBatchAppliesTheHostsRules(t *testing.T) {
	m := &protocol.Manifest{Name: "notes", Protocol: []int{1}, Command: []string{"notes-extension"},
		Provides: protocol.Provides{Families: []protocol.Family{{Name: "notes.changed", Rederivable: true}}}}
	rules := protocol.HostKVRules(m, func(scope string) bool { return scope == "s1" })
	batch := func(e protocol.Emission) protocol.KVCommitParams {
		return protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "notes", Key: "k", Value: []byte("v")}}, Emissions: []protocol.Emission{e}}
	}
	good := protocol.Emission{Scope: "s1", Source: "notes", DeliveryID: "d", Type: "notes.changed"}
	cases := []struct {
		name string
		bad  func(e *protocol.Emission)
		want *protocol.Error
	}{
		{"undeclared family", func(e *protocol.Emission) { e.Type = "notes.other" }, protocol.ErrUndeclared},
		{"unconfigured scope", func(e *protocol.Emission) { e.Scope = "s2" }, protocol.ErrNotFound},
		{"a schema not its own", func(e *protocol.Emission) { e.Payload.Schema = "other.x.v1" }, protocol.ErrUnreadableSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			e := good
			tc.bad(&e)
			_, err := db.CommitBatch(rules, batch(e), Limits{})
			wantCode(t, err, tc.want)
			if kvGet(t, db, "notes", "k") != nil || latest(t, db) != 0 {
				t.Fatal("part of the refused batch applied")
			}
			// The store's own rules know neither manifest nor scopes.
			if _, err := db.CommitKV("notes", batch(e), Limits{}); err != nil {
				t.Fatalf("CommitKV: %v", err)
			}
		})
	}
	// Negative control: a good emission applies under the host's rules.
	db := openDB(t, nil)
	res, err := db.CommitBatch(rules, batch(good), Limits{})
	if err != nil || len(res.Emissions) != 1 || !res.Emissions[0].Added || string(kvGet(t, db, "notes", "k")) != "v" {
		t.Fatalf("good batch: %+v %v", res, err)
	}
}
