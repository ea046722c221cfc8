package toolbelt

import (
	"context"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// DefaultGateTimeout bounds one operation.gate call: a gate that does not
// answer within it refuses the call (gate_failed).
const DefaultGateTimeout = 30 * time.Second

// OperationGates is the optional view of the packages that gate toolbelt
// calls: when Packages has it, every call of a package's operation is
// first put to the gates of the calling execution's scope.
type OperationGates interface {
	// OperationGates names, sorted, the installed packages (running or
	// not) whose operation gate (operation.gate) is enabled and whose
	// configuration uses scope. One that is not running refuses every
	// call it gates (gate_failed): a gate that is down fails closed.
	OperationGates(scope string) []string
}

// gate puts x's call of owner's operation to each operation gate of x's
// scope but owner's own, in order. It reports stop when the call must not
// reach the operation: a gate parked it (the answer is the Wait declared
// on the Work, owned by the gate's package, as the builtin wait answers),
// refused it (its operation error), or failed (gate_failed: it timed out,
// crashed, was not running or answered what the host cannot keep). A call
// whose request ID already has a committed output is not put to the gates:
// its replay calls nothing.
func (s *Server) gate(ctx context.Context, x pebblekv.Execution, owner string, req client.ToolbeltRequest,
	params protocol.OperationCallParams) (ans client.ToolbeltAnswer, stop bool, err error) {
	og, ok := s.deps.Packages.(OperationGates)
	if !ok {
		return ans, false, nil
	}
	var gates []string
	for _, g := range og.OperationGates(x.Scope) {
		if g != owner {
			gates = append(gates, g)
		}
	}
	if len(gates) == 0 || s.committed(owner, x.Work, req) {
		return ans, false, nil
	}
	input := req.Input
	if len(input) == 0 {
		input = jsontext.Value("{}")
	}
	p := protocol.OperationGateParams{Operation: req.Operation, Owner: owner, Authority: params.Authority, Input: input, RequestID: req.RequestID}
	for _, g := range gates {
		var res protocol.OperationGateResult
		gctx, cancel := context.WithTimeout(ctx, s.deps.GateTimeout)
		err := s.deps.Packages.Call(gctx, g, protocol.MethodOperationGate, p, &res)
		timedOut := gctx.Err() != nil
		cancel()
		switch {
		case err != nil && !timedOut && operationError(err):
			return ans, true, &protocol.Error{Code: protocol.CodeOf(err),
				Message: fmt.Sprintf("operation gate %s refused the call of %s: %v", g, req.Operation, err)}
		case err != nil:
			s.deps.Logger.Warn("toolbelt: an operation gate failed; the call is refused",
				"gate", g, "operation", req.Operation, "work", x.Work, "err", err)
			return ans, true, protocol.Errorf(protocol.ErrGateFailed,
				"operation gate %s failed, so the call of %s is refused: %v", g, req.Operation, err)
		case res.Wait != nil:
			if err := checkPlan(*res.Wait); err != nil {
				return ans, true, protocol.Errorf(protocol.ErrGateFailed,
					"operation gate %s parked the call of %s on a Wait the host cannot keep: %v", g, req.Operation, err)
			}
			w, err := s.deps.Engine.DeclareWait(ctx, x, g, *res.Wait)
			if err != nil {
				return ans, true, err
			}
			out, err := waitPayload(w)
			return answer(out, false), true, err
		}
	}
	return ans, false, nil
}

// committed reports whether req's request ID already has a committed
// output of owner's in x's Work (a read error counts as not: the gates are
// then asked, which is the safe side).
func (s *Server) committed(owner, work string, req client.ToolbeltRequest) bool {
	if req.RequestID == "" {
		return false
	}
	found := false
	_ = s.deps.DB.View(func(r *pebblekv.Reader) error {
		done, ok, err := r.OpResult(owner, replayKey(work, req.RequestID))
		found = ok && done.Operation == req.Operation
		return err
	})
	return found
}

// operationError reports whether err is a refusal a gate authored (a code
// an extension may author about the call itself), rather than a failure of
// the gate or of the connection to it.
func operationError(err error) bool {
	code := protocol.CodeOf(err)
	if code == "" {
		return false
	}
	e, known := protocol.LookupCode(code)
	if !known {
		return protocol.ValidCode(code)
	}
	if !e.Wire || e.RPC != protocol.RPCAuthored {
		return false
	}
	switch code {
	case protocol.CodeUnsupportedProtocolVersion, protocol.CodeReentrantCall, protocol.CodeOverloaded,
		protocol.CodeShuttingDown, protocol.CodeNotInitialized, protocol.CodeNeedsNewerHost,
		protocol.CodeTooLarge, protocol.CodeUndeclared, protocol.CodeUnsupported:
		return false
	}
	return true
}
