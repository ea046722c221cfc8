package sdk

import (
	"context"
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
)

// Gate types, as the host sends and takes them.
type (
	// OperationGateParams is a toolbelt call put to the extension's
	// operation gate: the operation, the package declaring it, the
	// authority the host built for the call and its input.
	OperationGateParams = protocol.OperationGateParams
	// OperationGateResult is the gate's decision: a Wait parks the call.
	OperationGateResult = protocol.OperationGateResult
	// WorkAdmitParams is a Work about to start its first attempt, shown to
	// the extension's start gate: the Work, its binding and first input.
	WorkAdmitParams = protocol.WorkAdmitParams
	// WorkAdmitResult is the start gate's decision: a Hold keeps the Work
	// pending until the extension settles it (Host.SettleHold).
	WorkAdmitResult = protocol.WorkAdmitResult
	// WorkHoldPlan is a hold and its reason, shown to the operator.
	WorkHoldPlan = protocol.WorkHoldPlan
)

// OperationGateFunc answers operation.gate for a call of another
// package's operation in one of the extension's scopes. A zero result
// lets the call through; a Wait parks it (the Work waits on a Wait the
// extension owns, and the caller is answered that Wait); an error made
// with Errorf refuses the call with its code. Any other failure (a panic,
// an unauthored error, taking longer than the host's 30 s) refuses the
// call gate_failed: the host fails closed.
type OperationGateFunc func(ctx context.Context, r *Request, p OperationGateParams) (OperationGateResult, error)

// StartGateFunc answers work.admit before the first attempt of a Work in
// one of the extension's scopes. A zero result lets it start; a Hold keeps
// it pending, with the reason shown, until the extension calls
// Host.SettleHold; an error refuses the start for now (the host asks again
// later, backing off).
type StartGateFunc func(ctx context.Context, r *Request, p WorkAdmitParams) (WorkAdmitResult, error)

// OperationGate serves operation.gate with fn, declaring operation_gate
// and the operation.gate permission. Registering twice panics.
func (x *Extension) OperationGate(fn OperationGateFunc) *Extension {
	once("OperationGate", x.Manifest.Provides.OperationGate, fn == nil)
	x.Manifest.Provides.OperationGate = true
	x.permit(protocol.PermissionOperationGate)
	return x.Method(protocol.MethodOperationGate, typed(protocol.MethodOperationGate, fn))
}

// StartGate serves work.admit with fn, declaring start_gate and the
// work.start_gate permission (which also lets the extension call
// Host.SettleHold). Registering twice panics.
func (x *Extension) StartGate(fn StartGateFunc) *Extension {
	once("StartGate", x.Manifest.Provides.StartGate, fn == nil)
	x.Manifest.Provides.StartGate = true
	x.permit(protocol.PermissionStartGate)
	return x.Method(protocol.MethodWorkAdmit, typed(protocol.MethodWorkAdmit, fn))
}

// permit adds permission to the manifest once.
func (x *Extension) permit(permission string) {
	if !slices.Contains(x.Manifest.Permissions, permission) {
		x.Manifest.Permissions = append(x.Manifest.Permissions, permission)
	}
}

// SettleHold settles a hold the extension's start gate placed on a Work:
// admit lets the Work's next start through once; otherwise the Work is
// cancelled with reason. key (optional, at most 128 bytes) makes a retry
// safe: the same settle repeated with the same key is answered again.
// A hold another package placed is ErrUnauthorized; a Work without one
// ErrNotFound; a hold already settled otherwise, or a Work no longer
// pending, ErrConflict.
func (h *Host) SettleHold(ctx context.Context, workID string, admit bool, reason, key string) error {
	_, err := invoke(ctx, h, protocol.WorkSettleHold, protocol.WorkSettleHoldParams{Work: workID, Admit: admit, Reason: reason, Key: key})
	return err
}
