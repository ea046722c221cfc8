package engine

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Executors is what the engine needs of the running packages to run Work:
// who declares an executor. The daemon's Packages implements it; a
// Packages without it runs no Work.
type Executors interface {
	// ExecutorOwner names the package declaring executor, with its
	// declaration ("" for none).
	ExecutorOwner(executor string) (pkg string, x protocol.Executor)
}

// ToolContext is the builtin read_context's answer: the Work an execution
// runs, its inputs, its context and what woke it.
type ToolContext struct {
	Work    protocol.WorkView `json:"work"`
	Inputs  []protocol.Event  `json:"inputs"`
	Context jsontext.Value    `json:"context,omitzero"`
	Woke    *protocol.Wake    `json:"woke,omitempty"`
}

// Controls an operator may apply to a Work's running execution.
const (
	ControlInterrupt = "interrupt"
	ControlInject    = "inject"
	ControlStop      = "stop"
)

// notYet answers a method of running Work that is not served yet.
func notYet(what string) error {
	return protocol.Errorf(protocol.ErrUnsupported, "%s: this host does not run Work yet", what)
}

// ExecutionByToken resolves a toolbelt bearer token to its running
// execution; any other token (unknown, settled, superseded) is
// unauthorized.
func (e *Engine) ExecutionByToken(token string) (pebblekv.Execution, error) {
	return pebblekv.Execution{}, notYet("the toolbelt")
}

// ReadContext is the builtin read_context's answer for execution x.
func (e *Engine) ReadContext(x pebblekv.Execution) (ToolContext, error) {
	return ToolContext{}, notYet("read_context")
}

// DeclareWait declares x's Work's Wait (at most one active per Work; a
// second is conflict). Owner is the wait operation's package, "" for the
// builtin wait.
func (e *Engine) DeclareWait(ctx context.Context, x pebblekv.Execution, owner string, p protocol.WaitPlan) (pebblekv.Wait, error) {
	return pebblekv.Wait{}, notYet("wait")
}

// DeclareOutcome records the outcome execution x declares for its
// attempt: completed, failed or handoff, with a reason.
func (e *Engine) DeclareOutcome(ctx context.Context, x pebblekv.Execution, state, reason string) error {
	return notYet("declare_outcome")
}

// PersistRecovery stores an execution's recovery metadata for its
// executor's package pkg, fenced by the lease epoch.
func (e *Engine) PersistRecovery(ctx context.Context, pkg string, p protocol.ExecutionPersistRecoveryParams) error {
	return notYet(protocol.MethodExecutionPersistRecovery)
}

// WaitProgress sets the progress line of a Work's active Wait, for the
// package that owns it.
func (e *Engine) WaitProgress(ctx context.Context, pkg string, p protocol.WaitProgressParams) error {
	return notYet(protocol.MethodWaitProgress)
}

// Control applies an operator's control (ControlInterrupt, ControlInject
// with text, ControlStop) to a Work's running execution; one its executor
// does not declare is unsupported without a call.
func (e *Engine) Control(ctx context.Context, workID, control, text string) error {
	return notYet("work " + control)
}

// Live is a Work's running execution's output so far.
func (e *Engine) Live(ctx context.Context, workID string, tail int) (protocol.ExecutorLiveResult, error) {
	return protocol.ExecutorLiveResult{}, notYet("work live")
}
