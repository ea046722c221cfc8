package daemon

import (
	"testing"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

func TestOlderKVLayoutIsRefusedBeforeStart(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *pebblekv.Tx) error { return tx.SetKVLayoutVersion("notes", 3) }); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{db: db}
	for _, tc := range []struct {
		declared int
		refused  bool
	}{{2, true}, {3, false}, {4, false}} {
		err := d.checkLayout(&protocol.Manifest{Name: "notes", KVVersion: tc.declared})
		if got := protocol.CodeOf(err) == protocol.CodeKVDowngrade; got != tc.refused {
			t.Errorf("declared %d: %v", tc.declared, err)
		}
	}
	// A package with nothing recorded starts at any layout.
	if err := d.checkLayout(&protocol.Manifest{Name: "fresh", KVVersion: 5}); err != nil {
		t.Fatal(err)
	}
}
