package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// TestCheckReadsTheConfigurationViewFromItsRequest: a check gets the
// configuration view on its Request (its scopes and entries), so it can
// judge how the configuration uses the extension; a task's Request carries
// none (the negative control).
func TestCheckReadsTheConfigurationViewFromItsRequest(t *testing.T) {
	var taskSaw *sdk.CheckConfig
	ext := sdk.New("judge").
		EntryType("judge-feed").
		Check("judge-usage", func(_ context.Context, r *sdk.Request, _ bool) (string, error) {
			if r.Config == nil {
				return "", sdk.Errorf(sdk.ErrInvalid, "no configuration view")
			}
			n := 0
			for _, s := range r.Config.Scopes {
				n += len(s.Entries)
			}
			return fmt.Sprintf("%d scopes, %d entries", len(r.Config.Scopes), n), nil
		}).
		Task("judge-sweep", time.Minute, func(_ context.Context, r *sdk.Request) error {
			taskSaw = r.Config
			return nil
		})
	h := sdktest.New(t, ext, sdktest.WithEntries(
		sdk.Entry{Scope: "s1", Type: "judge-feed", Name: "a"},
		sdk.Entry{Scope: "s1", Type: "judge-feed", Name: "b"},
		sdk.Entry{Scope: "s2", Type: "judge-feed", Name: "c"},
	))
	ctx := context.Background()
	res, err := h.Check(ctx, "judge-usage")
	if err != nil || !res.OK || res.Detail != "2 scopes, 3 entries" {
		t.Fatalf("check: %+v %v; want ok with 2 scopes, 3 entries", res, err)
	}
	if err := h.RunTask(ctx, "judge-sweep"); err != nil {
		t.Fatal(err)
	}
	if taskSaw != nil {
		t.Fatalf("a task's request carries a configuration view: %+v", taskSaw)
	}
}
