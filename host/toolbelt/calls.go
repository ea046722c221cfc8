package toolbelt

import (
	"context"
	"slices"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The builtin operations, which the engine answers.
const (
	BuiltinReadContext    = "read_context"
	BuiltinWait           = "wait"
	BuiltinDeclareOutcome = "declare_outcome"
)

// builtinOwner is the package name the builtins' replay records are kept
// under: core's own, which no package may take.
const builtinOwner = "core"

// call runs one granted operation for execution x.
func (s *Server) call(ctx context.Context, x pebblekv.Execution, req client.ToolbeltRequest) (client.ToolbeltAnswer, error) {
	g, err := s.grant(x, req.Operation)
	if err != nil {
		return client.ToolbeltAnswer{}, err
	}
	switch req.Operation {
	case BuiltinReadContext:
		return s.readContext(x)
	case BuiltinWait:
		return s.replayable(ctx, x, builtinOwner, req, func(ctx context.Context) (protocol.Payload, error) { return s.builtinWait(ctx, x, req.Input) })
	case BuiltinDeclareOutcome:
		return s.declareOutcome(ctx, x, req.Input)
	}
	pkg, op := s.deps.Packages.OperationOwner(req.Operation)
	if pkg == "" {
		return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrUndeclared,
			"no installed package declares operation %q; binding %q grants it, so install the package that declares it, or take it out of the binding", req.Operation, x.Binding)
	}
	params := protocol.OperationCallParams{
		Operation: req.Operation,
		Input:     protocol.Payload{Data: req.Input},
		Authority: protocol.Authority{Scope: x.Scope, Work: x.Work, Execution: x.ID, Connection: g.Connection, Caller: "execution:" + x.ID},
		RequestID: req.RequestID,
	}
	if ans, stop, err := s.gate(ctx, x, pkg, req, params); stop {
		return ans, err
	}
	switch op.Kind {
	case protocol.OperationHandler:
		return s.replayable(ctx, x, pkg, req, func(ctx context.Context) (protocol.Payload, error) { return s.handler(ctx, pkg, params) })
	case protocol.OperationWait:
		return s.replayable(ctx, x, pkg, req, func(ctx context.Context) (protocol.Payload, error) { return s.waitOperation(ctx, x, pkg, params) })
	case protocol.OperationEmit:
		return s.emitOperation(ctx, x, pkg, op, req, params)
	}
	return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrUnsupported,
		"operation %q is a %s operation, which this host does not serve through the toolbelt yet", req.Operation, op.Kind)
}

// grant is the grant of x's binding, when it grants operation.
func (s *Server) grant(x pebblekv.Execution, operation string) (Grant, error) {
	g, ok := s.deps.Grant(x.Scope, x.Binding)
	switch {
	case !ok:
		return g, protocol.Errorf(protocol.ErrUnauthorized,
			"binding %q is no longer configured in scope %q, so it grants no operation", x.Binding, x.Scope)
	case g.Toolbelt == "none":
		return g, protocol.Errorf(protocol.ErrUnauthorized,
			"binding %q in scope %q has toolbelt none, so its executions call no operation", x.Binding, x.Scope)
	case !slices.Contains(g.Operations, operation):
		return g, protocol.Errorf(protocol.ErrUnauthorized,
			"binding %q in scope %q does not grant operation %q: add it to the binding's operations", x.Binding, x.Scope, operation)
	}
	return g, nil
}

// replayable runs fn once per (package, Work, request ID): the output it
// returns is committed under that key, and a later call with the same key
// is answered that output without running fn. A call without a request ID
// is not replayed; an fn that fails commits nothing, so a retry runs it
// again. The key names the Work, so one Work never reads another's output
// by reusing its request ID.
func (s *Server) replayable(ctx context.Context, x pebblekv.Execution, pkg string, req client.ToolbeltRequest,
	fn func(ctx context.Context) (protocol.Payload, error)) (client.ToolbeltAnswer, error) {
	if req.RequestID == "" {
		out, err := s.bounded(ctx, fn)
		return answer(out, false), err
	}
	key := replayKey(x.Work, req.RequestID)
	defer s.keys.lock(pkg + "\x00" + key)()
	var (
		done  pebblekv.OpResult
		found bool
	)
	err := s.deps.DB.View(func(r *pebblekv.Reader) (err error) {
		done, found, err = r.OpResult(pkg, key)
		return err
	})
	switch {
	case err != nil:
		return client.ToolbeltAnswer{}, err
	case found && done.Operation != req.Operation:
		return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrConflict,
			"request ID %q was used for operation %q in this Work; give this call a new request ID", req.RequestID, done.Operation)
	case found:
		return answer(done.Output, true), nil
	}
	out, err := s.bounded(ctx, fn)
	if err != nil {
		return client.ToolbeltAnswer{}, err
	}
	res := pebblekv.OpResult{Operation: req.Operation, Output: out, At: s.deps.Now()}
	if err := s.deps.DB.Update(func(tx *pebblekv.Tx) error { return tx.PutOpResult(pkg, key, res) }); err != nil {
		// The effect happened: the caller gets its output, and a retry
		// runs the operation again, which its request ID keeps safe.
		s.deps.Logger.Warn("toolbelt: an operation's result was not committed for replay",
			"operation", req.Operation, "package", pkg, "work", x.Work, "err", err)
	}
	return answer(out, false), nil
}

// replayKey is a request ID's replay key within a Work.
func replayKey(work, requestID string) string { return work + "/" + requestID }

// bounded runs fn within the call timeout.
func (s *Server) bounded(ctx context.Context, fn func(ctx context.Context) (protocol.Payload, error)) (protocol.Payload, error) {
	ctx, cancel := context.WithTimeout(ctx, s.deps.CallTimeout)
	defer cancel()
	return fn(ctx)
}

func answer(p protocol.Payload, replayed bool) client.ToolbeltAnswer {
	return client.ToolbeltAnswer{Output: p.Data, Schema: p.Schema, Replayed: replayed}
}

// handler is a handler operation's operation.call on its package.
func (s *Server) handler(ctx context.Context, pkg string, p protocol.OperationCallParams) (protocol.Payload, error) {
	var res protocol.OperationCallResult
	if err := s.deps.Packages.Call(ctx, pkg, protocol.MethodOperationCall, p, &res); err != nil {
		return protocol.Payload{}, err
	}
	if len(res.Output.Data) == 0 {
		res.Output.Data = jsontext.Value("null")
	}
	return res.Output, nil
}

// waitOperation asks a wait operation's package for its plan and declares
// the Wait, owned by the package.
func (s *Server) waitOperation(ctx context.Context, x pebblekv.Execution, pkg string, p protocol.OperationCallParams) (protocol.Payload, error) {
	var res protocol.OperationWaitResult
	if err := s.deps.Packages.Call(ctx, pkg, protocol.MethodOperationWait, p, &res); err != nil {
		return protocol.Payload{}, err
	}
	if err := checkPlan(res.Wait); err != nil {
		return protocol.Payload{}, protocol.Errorf(protocol.ErrInternal, "%s planned a Wait the host cannot keep: %v", pkg, err)
	}
	w, err := s.deps.Engine.DeclareWait(ctx, x, pkg, res.Wait)
	if err != nil {
		return protocol.Payload{}, err
	}
	return waitPayload(w)
}

// builtinWait declares the Wait the input plans, with no owner.
func (s *Server) builtinWait(ctx context.Context, x pebblekv.Execution, input jsontext.Value) (protocol.Payload, error) {
	var plan protocol.WaitPlan
	if err := json.Unmarshal(input, &plan, strict); err != nil {
		return protocol.Payload{}, protocol.Errorf(protocol.ErrInvalid, "wait takes {\"description\", \"timeout_seconds\"}: %v", err)
	}
	if err := checkPlan(plan); err != nil {
		return protocol.Payload{}, err
	}
	w, err := s.deps.Engine.DeclareWait(ctx, x, "", plan)
	if err != nil {
		return protocol.Payload{}, err
	}
	return waitPayload(w)
}

// checkPlan refuses a timeout the host does not keep.
func checkPlan(p protocol.WaitPlan) error {
	if p.TimeoutSeconds < 0 || p.TimeoutSeconds > protocol.MaxWaitTimeoutSeconds {
		return protocol.Errorf(protocol.ErrInvalid, "timeout_seconds must be between 0 (none) and %d (30 days)", protocol.MaxWaitTimeoutSeconds)
	}
	return nil
}

// WaitAnswer is the output of a call that declared a Wait.
type WaitAnswer struct {
	ID          string    `json:"wait_id"`
	Work        string    `json:"work_id"`
	Owner       string    `json:"owner,omitempty"`
	Description string    `json:"description,omitempty"`
	Due         time.Time `json:"due,omitzero"`
	State       string    `json:"state"`
}

func waitPayload(w pebblekv.Wait) (protocol.Payload, error) {
	b, err := json.Marshal(WaitAnswer{ID: w.ID, Work: w.Work, Owner: w.Owner, Description: w.Description, Due: w.Due, State: w.State})
	return protocol.Payload{Data: b}, err
}

// readContext answers the builtin read_context.
func (s *Server) readContext(x pebblekv.Execution) (client.ToolbeltAnswer, error) {
	tc, err := s.deps.Engine.ReadContext(x)
	if err != nil {
		return client.ToolbeltAnswer{}, err
	}
	b, err := json.Marshal(tc)
	if err != nil {
		return client.ToolbeltAnswer{}, err
	}
	return client.ToolbeltAnswer{Output: b}, nil
}

// OutcomeInput is the builtin declare_outcome's input.
type OutcomeInput struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// declareOutcome records the outcome the execution declares.
func (s *Server) declareOutcome(ctx context.Context, x pebblekv.Execution, input jsontext.Value) (client.ToolbeltAnswer, error) {
	var in OutcomeInput
	if err := json.Unmarshal(input, &in, strict); err != nil {
		return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrInvalid, "declare_outcome takes {\"state\", \"reason\"}: %v", err)
	}
	switch in.State {
	case protocol.OutcomeCompleted, protocol.OutcomeFailed, protocol.OutcomeHandoff:
	default:
		return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrInvalid,
			"declare_outcome's state must be completed, failed or handoff, not %q (a Wait is declared with wait)", in.State)
	}
	if err := s.deps.Engine.DeclareOutcome(ctx, x, in.State, in.Reason); err != nil {
		return client.ToolbeltAnswer{}, err
	}
	b, err := json.Marshal(in)
	return client.ToolbeltAnswer{Output: b}, err
}
