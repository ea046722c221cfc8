package protocol

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// OperationGateParams asks an operation gate about one toolbelt call of
// another package's operation, made by an execution in a scope the gate's
// package is configured for: the operation, the package declaring it
// (Owner), the authority the host built for the call and the call's input.
type OperationGateParams struct {
	Operation string         `json:"operation"`
	Owner     string         `json:"owner"`
	Authority Authority      `json:"authority"`
	Input     jsontext.Value `json:"input,omitzero"`
	RequestID string         `json:"request_id,omitempty"`
}

// OperationGateResult is the gate's decision: no Wait lets the call
// through; a Wait parks it (the Work waits on it, owned by the gate's
// package, and the caller is answered the Wait instead of the operation's
// output). An error refuses the call.
type OperationGateResult struct {
	Wait *WaitPlan `json:"wait,omitempty"`
}

// WorkAdmitParams asks a start gate whether a Work's first attempt may
// start: the Work, the binding it runs under (with its executor) and its
// first input.
type WorkAdmitParams struct {
	Work     WorkView   `json:"work"`
	Binding  RunBinding `json:"binding"`
	Executor string     `json:"executor,omitempty"`
	Input    *Event     `json:"input,omitempty"`
}

// WorkAdmitResult is the start gate's decision: no Hold lets the start
// through; a Hold keeps the Work pending until the gate's package settles
// it with work.settle_hold. An error refuses the start for now (the host
// asks again later).
type WorkAdmitResult struct {
	Hold *WorkHoldPlan `json:"hold,omitempty"`
}

// WorkHoldPlan is a hold a start gate places: why, for the operator.
type WorkHoldPlan struct {
	Reason string `json:"reason"`
}

// WorkSettleHoldParams settles a hold the caller's start gate placed:
// Admit lets the Work's next start through once, otherwise the Work is
// cancelled with Reason. Key, when given, makes the settle idempotent: the
// same settle repeated with the same key after it took effect is answered
// again instead of conflict.
type WorkSettleHoldParams struct {
	Work   string `json:"work_id"`
	Admit  bool   `json:"admit"`
	Reason string `json:"reason,omitempty"`
	Key    string `json:"key,omitempty"`
}

// WorkSettleHoldResult acknowledges the settle.
type WorkSettleHoldResult struct{}

// Gate bounds.
const (
	// MaxHoldReason bounds a hold's and a settle's reason; a longer one is
	// cut to its first line within the bound, never refused.
	MaxHoldReason = 200
	// MaxSettleKey bounds work.settle_hold's key.
	MaxSettleKey = 128
)

// WorkHold is a start gate's hold on a Work as a host keeps it: who placed
// it and why, and once settled, how (Admit) and under which key.
type WorkHold struct {
	Package string    `json:"package"`
	Reason  string    `json:"reason,omitempty"`
	Since   time.Time `json:"since"`
	Settled bool      `json:"settled,omitzero"`
	Admit   bool      `json:"admit,omitzero"`
	Key     string    `json:"key,omitempty"`
}

// Held reports whether h still holds its Work.
func (h *WorkHold) Held() bool { return h != nil && !h.Settled }

// HeldReason is what a held Work's reason says.
func HeldReason(pkg, reason string) string {
	if reason == "" {
		return "held by " + pkg + "'s start gate"
	}
	return "held by " + pkg + "'s start gate: " + reason
}

// SettledCancelReason is what a Work cancelled by a refused hold says.
func SettledCancelReason(pkg, reason string) string {
	if reason == "" {
		return "cancelled by " + pkg + "'s start gate"
	}
	return "cancelled by " + pkg + "'s start gate: " + reason
}

// CheckSettleHold is how a host judges work.settle_hold from caller, the
// package whose service received it, against the Work's state and hold
// (found says the Work exists). It answers replay true for a settle that
// already took effect under the same key (answered {} again, changing
// nothing). Every host judges it with this one function, so the daemon and
// the in-memory test host answer alike.
func CheckSettleHold(caller string, p WorkSettleHoldParams, state string, hold *WorkHold, found bool) (replay bool, err error) {
	switch {
	case p.Work == "":
		return false, Errorf(ErrInvalid, "%s: work_id is required", MethodWorkSettleHold)
	case len(p.Key) > MaxSettleKey:
		return false, Errorf(ErrInvalid, "%s: the key is %d bytes; give one of at most %d", MethodWorkSettleHold, len(p.Key), MaxSettleKey)
	case !found || hold == nil:
		return false, Errorf(ErrNotFound, "%s: Work %q has no hold to settle", MethodWorkSettleHold, p.Work)
	case hold.Package != caller:
		return false, Errorf(ErrUnauthorized, "%s: the hold on Work %s was placed by %s's start gate; only it settles it", MethodWorkSettleHold, p.Work, hold.Package)
	case hold.Settled && p.Key != "" && p.Key == hold.Key && p.Admit == hold.Admit:
		return true, nil
	case hold.Settled:
		return false, Errorf(ErrConflict, "%s: the hold on Work %s is already settled", MethodWorkSettleHold, p.Work)
	case state != WorkStatePending:
		return false, Errorf(ErrConflict, "%s: Work %s is %s, so its hold no longer matters", MethodWorkSettleHold, p.Work, state)
	}
	return false, nil
}

// Gate methods.
var (
	// OperationGate asks an operation gate about a toolbelt call.
	OperationGate = Desc[OperationGateParams, OperationGateResult]{Name: MethodOperationGate}
	// WorkAdmit asks a start gate about a Work's first attempt.
	WorkAdmit = Desc[WorkAdmitParams, WorkAdmitResult]{Name: MethodWorkAdmit}
	// WorkSettleHold settles a hold the caller's start gate placed.
	WorkSettleHold = Desc[WorkSettleHoldParams, WorkSettleHoldResult]{Name: MethodWorkSettleHold}
)
