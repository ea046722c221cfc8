package hostsuite_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestWeakenedWorkHostsFailTheWorkCancelChecks: a host that cancels
// whatever it is asked to fails the refusals check, and one that finds no
// Work fails the own-kind check; the faithful host passes both.
func TestWeakenedWorkHostsFailTheWorkCancelChecks(t *testing.T) {
	cancelsAnything := withHandler(protocol.MethodWorkCancel, func(jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		return func(context.Context, jsontext.Value) (any, error) {
			return protocol.WorkCancelResult{}, nil
		}
	})
	findsNothing := withHandler(protocol.MethodWorkCancel, func(jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		return func(context.Context, jsontext.Value) (any, error) {
			return nil, protocol.Errorf(protocol.ErrNotFound, "no Work")
		}
	})
	cases := []struct {
		name     string
		host     hostsuite.Host
		mustFail string
	}{
		{"Work cancelled whatever its kind and state", cancelsAnything, "WorkCancelRefusesWhatIsNotItsOwn"},
		{"no Work found", findsNothing, "WorkCancelOfItsOwnKindCancelsItOnce"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := hostsuite.Failures(t, tc.host)[tc.mustFail]; !ok {
				t.Errorf("check %s passed against a host with %s", tc.mustFail, tc.name)
			}
		})
	}
	if failed := hostsuite.Failures(t, hostsuite.HostFunc(memHost)); len(failed) > 0 {
		t.Fatalf("the faithful host fails: %v", failed)
	}
}
