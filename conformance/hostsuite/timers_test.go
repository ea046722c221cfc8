package hostsuite_test

import (
	"context"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestWeakenedTimerHostsFailTheTimerChecks: a host that arms whatever it
// is given fails the refusals check, and one that keeps no timer fails the
// kept check; the faithful host passes both.
func TestWeakenedTimerHostsFailTheTimerChecks(t *testing.T) {
	// armsAnything makes every timer the extension's own before arming it.
	armsAnything := withHandler(protocol.MethodTimerArm, func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		return func(ctx context.Context, raw jsontext.Value) (any, error) {
			var p protocol.TimerArmParams
			_ = json.Unmarshal(raw, &p)
			if p.ID == "" || p.Due.IsZero() {
				return base(ctx, raw)
			}
			p.Family, p.Scope, p.Payload.Schema = hostsuite.Family, hostsuite.Scope, hostsuite.Schema
			if p.Recurrence != nil {
				p.Recurrence.Kind = hostsuite.Recurrence
			}
			return base(ctx, encodeAny(p))
		}
	})
	// keepsNothing answers every cancel as if nothing was armed.
	keepsNothing := withHandler(protocol.MethodTimerCancel, func(jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		return func(context.Context, jsontext.Value) (any, error) {
			return protocol.TimerCancelResult{}, nil
		}
	})
	cases := []struct {
		name     string
		host     hostsuite.Host
		mustFail string
	}{
		{"timers armed whatever their family, kind and scope", armsAnything, "TimerArmRefusesWhatIsNotItsOwn"},
		{"timers not kept", keepsNothing, "TimerArmOfItsOwnIsKeptUntilCancelled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := hostsuite.Failures(t, tc.host)[tc.mustFail]; !ok {
				t.Errorf("check %s passed against a host with %s", tc.mustFail, tc.name)
			}
		})
	}
}
