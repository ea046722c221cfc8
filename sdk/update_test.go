package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// counter is an extension whose operation bumps a counter with Update and
// emits an Event of the new count in the same batch. interfere, when set,
// writes the counter behind Update's back during the first attempt, so that
// attempt's commit conflicts.
func counter(family string, interfere bool, fail bool) *sdk.Extension {
	return sdk.New("cnt").
		Family("cnt.bumped", sdk.Rederivable()).
		Schema("cnt.bumped", 1).
		Operation("cnt.bump", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (sdk.KVCommitResult, error) {
			attempt := 0
			return r.Host.Update(ctx, "cnt", "n", func(old []byte, _ bool, b *sdk.Batch) ([]byte, error) {
				attempt++
				if interfere && attempt == 1 {
					if _, err := r.Host.Commit(ctx, sdk.NewBatch().Put("cnt", "n", []byte("10"))); err != nil {
						return nil, err
					}
				}
				if fail {
					return nil, errors.New("the author's fn refused")
				}
				n, _ := strconv.Atoi(string(old))
				n++
				b.Put("cnt", "attempts", []byte(strconv.Itoa(attempt)))
				b.Emit(sdk.Emission{
					Scope: "s1", Source: "cnt/op", DeliveryID: fmt.Sprintf("bump/%d/attempt/%d", n, attempt), Type: family,
					Payload: sdk.Payload{Schema: family + ".v1", Data: []byte(`{}`)},
				})
				return []byte(strconv.Itoa(n)), nil
			})
		}))
}

// TestUpdateCommitsItsBatchWithTheWrite: what Update's fn adds to the batch
// (an Emit, another Put) commits in the same atomic unit as the key's
// write; an attempt that conflicts applies none of it, so the retry's
// Event is the only one; an fn error or a refused emission applies
// nothing.
func TestUpdateCommitsItsBatchWithTheWrite(t *testing.T) {
	cases := []struct {
		name      string
		family    string
		interfere bool
		fail      bool
		wantErr   error
		wantN     string // the counter after the call
		wantEvent string // the one Event's delivery ID, "" for none
	}{
		{"emission commits with the write", "cnt.bumped", false, false, nil, "1", "bump/1/attempt/1"},
		{"a conflicting attempt applies nothing; the retry emits once", "cnt.bumped", true, false, nil, "11", "bump/11/attempt/2"},
		{"a refused emission applies no write", "cnt.other", false, false, sdk.ErrUndeclared, "", ""},
		{"an fn error applies nothing", "cnt.bumped", false, true, errors.New("any"), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New(t, counter(tc.family, tc.interfere, tc.fail), sdktest.WithScopes("s1"))
			res, err := sdktest.Call[sdk.KVCommitResult](context.Background(), h, "cnt.bump", struct{}{})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("bump: %v", err)
			case tc.wantErr != nil && err == nil:
				t.Fatalf("bump succeeded, want %v", tc.wantErr)
			case tc.wantErr == sdk.ErrUndeclared && !errors.Is(err, sdk.ErrUndeclared):
				t.Fatalf("bump: %v, want undeclared", err)
			}
			kv := h.Host().KV("cnt")
			if got := string(kv["n"]); got != tc.wantN {
				t.Fatalf("counter %q, want %q", got, tc.wantN)
			}
			evs := h.Host().Events()
			if tc.wantEvent == "" {
				if len(evs) != 0 || kv["attempts"] != nil {
					t.Fatalf("a failed Update applied %d Events and attempts=%q", len(evs), kv["attempts"])
				}
				return
			}
			if len(evs) != 1 || evs[0].DeliveryID != tc.wantEvent {
				t.Fatalf("Events %+v, want exactly the one delivered as %s", evs, tc.wantEvent)
			}
			if len(res.Emissions) != 1 || !res.Emissions[0].Added || res.Emissions[0].EventID != evs[0].ID {
				t.Fatalf("Update returned %+v, want the Event's acceptance", res)
			}
		})
	}
}
