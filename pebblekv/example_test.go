package pebblekv_test

import (
	"fmt"
	"log"
	"os"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// A kv.commit batch: a precondition, a write and an emitted Event, applied
// together, then read back.
func ExampleDB_CommitKV() {
	dir, err := os.MkdirTemp("", "pebblekv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := pebblekv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	res, err := db.CommitKV("notes", protocol.KVCommitParams{
		Checks:    []protocol.KVCheck{{Namespace: "notes", Key: "todo/1", Absent: true}},
		Puts:      []protocol.KVPut{{Namespace: "notes", Key: "todo/1", Value: []byte("buy milk")}},
		Emissions: []protocol.Emission{{Scope: "home", Source: "notes", DeliveryID: "todo/1", Type: "notes.added"}},
	}, pebblekv.Limits{MaxDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added:", res.Emissions[0].Added)

	// The same batch again fails its precondition and applies nothing.
	_, err = db.CommitKV("notes", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "notes", Key: "todo/1", Absent: true}},
	}, pebblekv.Limits{})
	fmt.Println("code:", protocol.CodeOf(err))

	err = db.View(func(r *pebblekv.Reader) error {
		v, _, _, err := r.KVGet("notes", "todo/1")
		if err != nil {
			return err
		}
		evs, err := r.ScopeEvents([]string{"home"}, 0, 0)
		if err != nil {
			return err
		}
		fmt.Printf("%s; %d event, seq %d, type %s\n", v, len(evs), evs[0].Seq, evs[0].Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// added: true
	// code: conflict
	// buy milk; 1 event, seq 1, type notes.added
}
