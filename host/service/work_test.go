package service_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestWorkCancelRecordsWhoCancelledAndFreesTheKeys: a package's
// work.cancel leaves its Work cancelled in the store with the package's
// name and reason, frees the Work's keys for a new open Work, and wakes
// what follows Work changes; a refused cancel (another kind's Work)
// changes nothing and wakes nothing.
func TestWorkCancelRecordsWhoCancelledAndFreesTheKeys(t *testing.T) {
	db := openDB(t, t.TempDir(), true)
	t.Cleanup(func() { db.Close() })
	gen := &config.Generation{ID: 1, Config: &config.Config{Scopes: []config.Scope{{
		ID: hostsuite.Scope, Entries: []config.Entry{{Name: "a", Type: hostsuite.EntryType}},
	}}}}
	err := db.Update(func(tx *pebblekv.Tx) error {
		for _, w := range []pebblekv.Work{
			{ID: "w_mine", Scope: hostsuite.Scope, Kind: hostsuite.WorkKind, Keys: []string{"k"}, State: pebblekv.WorkPending},
			{ID: "w_theirs", Scope: hostsuite.Scope, Kind: "other.job", Keys: []string{"j"}, State: pebblekv.WorkPending},
		} {
			if err := tx.PutWork(w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := hostsuite.WorkSetup().Manifest
	var wakes atomic.Int64
	svc := service.New(m, service.Deps{DB: db, Generation: func() *config.Generation { return gen }, WorkChanged: func() { wakes.Add(1) }})
	conn := connectService(t, m, svc)
	ctx := context.Background()

	_, err = jsonrpc.Invoke(ctx, conn, protocol.WorkCancel, protocol.WorkCancelParams{WorkID: "w_theirs", Reason: "mine now"})
	if protocol.CodeOf(err) != protocol.CodeNotFound || wakes.Load() != 0 || svc.Refused() != 1 {
		t.Fatalf("cancelling another kind's Work: %v, %d wakes, %d refused; want not_found, none, 1", err, wakes.Load(), svc.Refused())
	}
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.WorkCancel, protocol.WorkCancelParams{WorkID: "w_mine", Reason: "entry removed"}); err != nil {
		t.Fatal(err)
	}
	if wakes.Load() != 1 {
		t.Fatalf("%d wakes after a cancel, want 1", wakes.Load())
	}
	err = db.View(func(r *pebblekv.Reader) error {
		for id, want := range map[string]string{"w_mine": pebblekv.WorkCancelled, "w_theirs": pebblekv.WorkPending} {
			w, found, err := r.Work(id)
			if err != nil || !found || w.State != want {
				t.Errorf("Work %s: %+v found %v %v; want state %s", id, w, found, err, want)
			}
		}
		if w, _, _ := r.Work("w_mine"); w.Reason != "cancelled by "+hostsuite.Extension+": entry removed" {
			t.Errorf("the cancelled Work's reason: %q", w.Reason)
		}
		if _, open, err := r.WorkByKey(hostsuite.Scope, "k"); err != nil || open {
			t.Errorf("the cancelled Work still holds its key k (%v)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
