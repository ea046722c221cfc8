package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// TestHostCancelWorkCancelsOnlyWorkOfItsOwnKinds: a task that retires Work
// through Host.CancelWork cancels the Work of the kind its extension
// declares, with its reason, and is refused not_found for another kind's
// Work, which stays open.
func TestHostCancelWorkCancelsOnlyWorkOfItsOwnKinds(t *testing.T) {
	var refused error
	ext := sdk.New("retire").Task("retire-sweep", time.Minute, func(ctx context.Context, r *sdk.Request) error {
		refused = r.Host.CancelWork(ctx, "w_theirs", "sweep")
		return r.Host.CancelWork(ctx, "w_mine", "sweep")
	})
	ext.Manifest.Provides.Routes = []sdk.Route{{Handler: "retire"}}
	ext.Manifest.Provides.WorkKinds = []sdk.WorkKind{{Kind: "retire.job"}}
	h := sdktest.New(t, ext)
	h.Host().PutWork(protocol.WorkView{ID: "w_mine", Scope: "s1", Kind: "retire.job", State: "pending"})
	h.Host().PutWork(protocol.WorkView{ID: "w_theirs", Scope: "s1", Kind: "other.job", State: "pending"})
	if err := h.RunTask(context.Background(), "retire-sweep"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(refused, sdk.ErrNotFound) {
		t.Errorf("cancelling another kind's Work: %v, want not_found", refused)
	}
	got := map[string]string{}
	for _, w := range h.Host().Works() {
		got[w.ID] = w.State + " " + w.Reason
	}
	want := map[string]string{"w_mine": "cancelled cancelled by retire: sweep", "w_theirs": "pending "}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("Work %s: %q, want %q", id, got[id], st)
		}
	}
}
