package sdk_test

import (
	"context"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type approveInput struct {
	Work  string `json:"work"`
	Admit bool   `json:"admit"`
}

// gatekeeper holds every deploy Work, refuses merges while frozen, parks
// releases, and settles its holds through its approve operation.
func gatekeeper() *sdk.Extension {
	return sdk.New("gatekeeper").
		StartGate(func(_ context.Context, _ *sdk.Request, p sdk.WorkAdmitParams) (sdk.WorkAdmitResult, error) {
			if p.Work.Kind == "deploy" {
				return sdk.WorkAdmitResult{Hold: &sdk.WorkHoldPlan{Reason: "a person approves deploys"}}, nil
			}
			return sdk.WorkAdmitResult{}, nil
		}).
		OperationGate(func(_ context.Context, _ *sdk.Request, p sdk.OperationGateParams) (sdk.OperationGateResult, error) {
			switch p.Operation {
			case "gh.merge":
				return sdk.OperationGateResult{}, sdk.Errorf(sdk.ErrUnauthorized, "merges are frozen")
			case "gh.release":
				return sdk.OperationGateResult{Wait: &sdk.WaitPlan{Description: "release approval"}}, nil
			}
			return sdk.OperationGateResult{}, nil
		}).
		Operation("gatekeeper.approve", sdk.Handler(func(ctx context.Context, r *sdk.Request, in approveInput) (struct{}, error) {
			return struct{}{}, r.Host.SettleHold(ctx, in.Work, in.Admit, "by the on-call", "approve-"+in.Work)
		}))
}

// TestGatesDeclareTheirSurfacesAndPermissions: the registrations declare
// operation_gate and start_gate with their permissions, so both methods
// and work.settle_hold are enabled.
func TestGatesDeclareTheirSurfacesAndPermissions(t *testing.T) {
	m := gatekeeper().Manifest
	for _, method := range []string{protocol.MethodOperationGate, protocol.MethodWorkAdmit, protocol.MethodWorkSettleHold} {
		if !m.Enabled(method) {
			t.Errorf("%s is not enabled by %+v", method, m.Provides)
		}
	}
	if m.Enabled(protocol.MethodWorkSettleHold) == sdk.New("plain").Manifest.Enabled(protocol.MethodWorkSettleHold) {
		t.Errorf("a package without a start gate may settle holds")
	}
}

// TestGatesAnswerThroughTheWire: work.admit and operation.gate reach the
// registered functions and their answers (a hold, a refusal's code, a
// parking Wait, a pass) come back as the host reads them.
func TestGatesAnswerThroughTheWire(t *testing.T) {
	h := sdktest.New(t, gatekeeper())
	ctx := context.Background()
	for _, c := range []struct {
		kind string
		hold bool
	}{{"deploy", true}, {"lint", false}} {
		var res protocol.WorkAdmitResult
		err := h.Raw(ctx, protocol.MethodWorkAdmit, protocol.WorkAdmitParams{Work: protocol.WorkView{ID: "w_1", Kind: c.kind}}, &res)
		if err != nil || (res.Hold != nil) != c.hold {
			t.Errorf("work.admit of a %s Work: %+v, %v", c.kind, res, err)
		}
	}
	for _, c := range []struct {
		op   string
		code string
		wait bool
	}{{"gh.merge", protocol.CodeUnauthorized, false}, {"gh.release", "", true}, {"gh.read", "", false}} {
		var res protocol.OperationGateResult
		err := h.Raw(ctx, protocol.MethodOperationGate, protocol.OperationGateParams{Operation: c.op, Owner: "gh"}, &res)
		if protocol.CodeOf(err) != c.code || (res.Wait != nil) != c.wait {
			t.Errorf("operation.gate of %s: %+v, %v; want code %q, wait %v", c.op, res, err, c.code, c.wait)
		}
	}
}

// TestSettleHoldSettlesOnlyTheExtensionsOwnHold: Host.SettleHold admits a
// hold the extension placed (and a repeat with its key is answered
// again), refuses another package's hold unauthorized and cancels when it
// does not admit.
func TestSettleHoldSettlesOnlyTheExtensionsOwnHold(t *testing.T) {
	h := sdktest.New(t, gatekeeper())
	ctx := context.Background()
	mem := h.Host()
	for _, id := range []string{"w_own", "w_foreign", "w_refused"} {
		mem.PutWork(protocol.WorkView{ID: id, Scope: "s", Kind: "deploy", State: "pending"})
	}
	mem.PutHold("w_own", protocol.WorkHold{Package: "gatekeeper", Reason: "approve"})
	mem.PutHold("w_refused", protocol.WorkHold{Package: "gatekeeper", Reason: "approve"})
	mem.PutHold("w_foreign", protocol.WorkHold{Package: "other", Reason: "theirs"})
	for _, c := range []struct {
		work  string
		admit bool
		code  string
	}{
		{"w_own", true, ""},
		{"w_own", true, ""}, // the same settle, the same key
		{"w_foreign", true, protocol.CodeUnauthorized},
		{"w_none", true, protocol.CodeNotFound},
		{"w_refused", false, ""},
	} {
		_, err := sdktest.Call[struct{}](ctx, h, "gatekeeper.approve", approveInput{Work: c.work, Admit: c.admit})
		if protocol.CodeOf(err) != c.code {
			t.Errorf("approve %s: %v, want code %q", c.work, err, c.code)
		}
	}
	got := map[string]string{}
	for _, w := range mem.Works() {
		got[w.ID] = w.State
		if w.ID == "w_own" && (w.Hold == nil || !w.Hold.Settled || !w.Hold.Admit) {
			t.Errorf("w_own's hold %+v, want settled admitting", w.Hold)
		}
		if w.ID == "w_foreign" && w.Hold.Settled {
			t.Errorf("another package's hold was settled")
		}
	}
	if got["w_own"] != "pending" || got["w_refused"] != "cancelled" || got["w_foreign"] != "pending" {
		t.Errorf("states %v", got)
	}
}
