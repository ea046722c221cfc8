package protocol

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Execution outcome states: how an attempt ended, as the scheduler records
// it on the execution and turns it into the Work's next state.
const (
	// OutcomeCompleted: the Work is done.
	OutcomeCompleted = "completed"
	// OutcomeFailed: the attempt failed; the retry policy decides whether
	// another attempt starts.
	OutcomeFailed = "failed"
	// OutcomeWaiting: the attempt parked the Work on a Wait declared
	// during it; the Wait's wake starts the next attempt.
	OutcomeWaiting = "waiting"
	// OutcomeHandoff: the attempt handed the Work back to be started again
	// at once (a new attempt, no retry counted).
	OutcomeHandoff = "handoff"
)

// Toolbelt environment: the variables the host puts in every execution's
// environment, so a program the executor runs can reach the toolbelt
// (`open-conduit call`) as the execution.
const (
	// EnvToolbelt is the toolbelt's Unix socket path.
	EnvToolbelt = "OPEN_CONDUIT_TOOLBELT"
	// EnvToken is the execution's bearer token; it dies with the
	// execution.
	EnvToken = "OPEN_CONDUIT_TOKEN"
	// EnvWork and EnvExecution name the Work and the execution.
	EnvWork      = "OPEN_CONDUIT_WORK"
	EnvExecution = "OPEN_CONDUIT_EXECUTION"
	// EnvBinary is the absolute path of the open-conduit executable, so a
	// script runs "$OPEN_CONDUIT" call … without it on PATH.
	EnvBinary = "OPEN_CONDUIT"
)

// Toolbelt is where an execution reaches the host's toolbelt: the socket,
// and the bearer token that identifies the execution there.
type Toolbelt struct {
	Socket string `json:"socket"`
	Token  string `json:"token"`
}

// RunBinding is the binding a Work runs under, as its executor sees it:
// its name, the executor's own config for it, and its toolbelt label.
type RunBinding struct {
	Name     string         `json:"name"`
	Config   jsontext.Value `json:"config,omitzero"`
	Toolbelt string         `json:"toolbelt,omitempty"`
}

// Wake is what ended a Work's Wait and so starts its next attempt: the
// Event routed to the waiting Work, or the Wait's timeout.
type Wake struct {
	Wait string `json:"wait_id"`
	// Reason is "event" or "timeout".
	Reason string `json:"reason"`
	// Event is the waking Event (Reason "event").
	Event *Event    `json:"event,omitempty"`
	At    time.Time `json:"at"`
}

// Wake reasons.
const (
	WakeEvent   = "event"
	WakeTimeout = "timeout"
)

// ExecutorRunParams starts one attempt of a Work on one of the package's
// executors. Execution is unguessable and Epoch is the attempt's lease:
// every later call about the execution names both, and a call naming an
// older epoch is refused. Env is the whole environment the host wants the
// executor's process to have on top of the package's own (the toolbelt
// variables, the binding's pass_env names with their daemon values).
type ExecutorRunParams struct {
	Execution string            `json:"execution_id"`
	Epoch     uint64            `json:"lease_epoch"`
	Executor  string            `json:"executor"`
	Attempt   int               `json:"attempt"`
	Work      WorkView          `json:"work"`
	Inputs    []Event           `json:"inputs,omitempty"`
	Woke      *Wake             `json:"woke,omitempty"`
	Context   jsontext.Value    `json:"context,omitzero"`
	Binding   RunBinding        `json:"binding"`
	Env       map[string]string `json:"env,omitempty"`
	Toolbelt  Toolbelt          `json:"toolbelt"`
}

// ExecutorRunResult acknowledges a started execution; Recovery, when set,
// is its first recovery metadata (as execution.persist_recovery would
// persist it).
type ExecutorRunResult struct {
	Recovery jsontext.Value `json:"recovery,omitzero"`
}

// ExecutionRef names one execution under its lease, and the executor that
// runs it (so a package with several executors, restarted, knows whose it
// is).
type ExecutionRef struct {
	Execution string `json:"execution_id"`
	Epoch     uint64 `json:"lease_epoch"`
	Executor  string `json:"executor,omitempty"`
}

// ExecutorWaitParams observes an execution until it settles. Cancelling
// the call ($/cancel) stops the observation only: the execution goes on.
type ExecutorWaitParams = ExecutionRef

// ExecutorWaitResult is how the execution settled. State is one of the
// outcome states; ExitCode is a process's, when the executor ran one.
type ExecutorWaitResult struct {
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// ExecutorRecoverParams asks the package to adopt an execution it (or an
// earlier process of it) started, from the last recovery metadata
// persisted for it, under a new lease epoch. A package that cannot
// answers not_adoptable.
type ExecutorRecoverParams struct {
	ExecutorRunParams
	Recovery jsontext.Value `json:"recovery,omitzero"`
}

// ExecutorRecoverResult acknowledges an adopted execution.
type ExecutorRecoverResult struct{}

// ExecutorStopParams stops an execution and waits for its physical stop.
// Recovery is the last persisted metadata, for an execution the current
// process did not start.
type ExecutorStopParams struct {
	ExecutionRef
	Recovery jsontext.Value `json:"recovery,omitzero"`
}

// ExecutorStopResult is the physical-stop evidence: Stopped says nothing of
// the execution runs any more, and Evidence says how the package knows.
type ExecutorStopResult struct {
	Stopped  bool   `json:"stopped"`
	Evidence string `json:"evidence,omitempty"`
}

// ExecutorInterruptParams interrupts a running execution (a shell's
// SIGINT): it should settle soon, as it decides.
type ExecutorInterruptParams = ExecutionRef

// ExecutorInjectParams hands a running execution one line of input.
type ExecutorInjectParams struct {
	ExecutionRef
	Text string `json:"text"`
}

// ExecutorResumeParams resumes a waiting execution with new input.
type ExecutorResumeParams struct {
	ExecutionRef
	Text string `json:"text"`
}

// ExecutorControlResult acknowledges interrupt, inject, resume and forget.
type ExecutorControlResult struct{}

// ExecutorLiveParams asks for a running attempt's output so far, at most
// Tail bytes of each output.
type ExecutorLiveParams struct {
	ExecutionRef
	Tail int `json:"tail,omitempty"`
}

// LiveOutput is one output of a live execution: its name, media type,
// size so far and last bytes.
type LiveOutput struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
	Size      int64  `json:"size"`
	Tail      []byte `json:"tail,omitempty"`
}

// ExecutorLiveResult is a live execution's outputs; an execution with none
// to show answers not_live.
type ExecutorLiveResult struct {
	Outputs []LiveOutput `json:"outputs"`
}

// ExecutionPersistRecoveryParams persists an execution's recovery
// metadata, fenced by its lease: a call naming an epoch other than the
// execution's current one is refused conflict, so a superseded observer
// cannot overwrite its successor's metadata.
type ExecutionPersistRecoveryParams struct {
	ExecutionRef
	Recovery jsontext.Value `json:"recovery"`
	// Process, when set, is the process the execution runs in, started
	// in a session of its own so that it outlives the package: the host
	// spares it, and what it starts, whenever it stops or reaps the
	// package's processes (the package crashed, stopped, or the daemon
	// stopped), for as long as a process with that pid has that start
	// time.
	Process *ExecutionProcess `json:"process,omitempty"`
}

// ExecutionProcess names one process by its pid and its start time (field
// 22 of /proc/PID/stat, clock ticks after boot), so a reused pid is never
// taken for it.
type ExecutionProcess struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// ExecutionPersistRecoveryResult acknowledges the write.
type ExecutionPersistRecoveryResult struct{}

// MaxRecoveryBytes bounds one execution's recovery metadata.
const MaxRecoveryBytes = 64 << 10

// WaitPlan is what a wait operation (operation.wait) or the builtin wait
// declares: a description, and a timeout after which the Wait wakes the
// Work anyway (0: none; the Wait then waits for an Event).
type WaitPlan struct {
	Description    string `json:"description,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// OperationWaitParams asks a wait operation's package to plan a Wait for a
// call: the same shape as operation.call.
type OperationWaitParams = OperationCallParams

// OperationWaitResult is the planned Wait.
type OperationWaitResult struct {
	Wait WaitPlan `json:"wait"`
}

// WaitProgressParams sets the progress line of the active Wait of a Work
// whose Wait the caller's operation declared ("" clears it).
type WaitProgressParams struct {
	Work     string `json:"work_id"`
	Progress string `json:"progress"`
}

// WaitProgressResult acknowledges the progress line.
type WaitProgressResult struct{}

// Wait limits.
const (
	// MaxWaitDescription bounds a Wait's description; a longer one is cut
	// to its first line within the bound, never refused.
	MaxWaitDescription = 200
	// MaxWaitProgress bounds a Wait's progress line, cut the same way.
	MaxWaitProgress = 120
	// MaxWaitTimeoutSeconds bounds a Wait's timeout (30 days).
	MaxWaitTimeoutSeconds = 30 * 24 * 3600
)

// Executor methods whose wire types exist.
var (
	// ExecutorRun starts an execution.
	ExecutorRun = Desc[ExecutorRunParams, ExecutorRunResult]{Name: MethodExecutorRun}
	// ExecutorWait observes an execution until it settles.
	ExecutorWait = Desc[ExecutorWaitParams, ExecutorWaitResult]{Name: MethodExecutorWait}
	// ExecutorRecover adopts an execution from its recovery metadata.
	ExecutorRecover = Desc[ExecutorRecoverParams, ExecutorRecoverResult]{Name: MethodExecutorRecover}
	// ExecutorStop stops an execution with physical-stop evidence.
	ExecutorStop = Desc[ExecutorStopParams, ExecutorStopResult]{Name: MethodExecutorStop}
	// ExecutorInterrupt interrupts a running execution.
	ExecutorInterrupt = Desc[ExecutorInterruptParams, ExecutorControlResult]{Name: MethodExecutorInterrupt}
	// ExecutorInject hands a running execution a line of input.
	ExecutorInject = Desc[ExecutorInjectParams, ExecutorControlResult]{Name: MethodExecutorInject}
	// ExecutorResume resumes a waiting execution.
	ExecutorResume = Desc[ExecutorResumeParams, ExecutorControlResult]{Name: MethodExecutorResume}
	// ExecutorLive reads a running attempt's output so far.
	ExecutorLive = Desc[ExecutorLiveParams, ExecutorLiveResult]{Name: MethodExecutorLive}
	// ExecutionPersistRecovery persists recovery metadata, lease-fenced.
	ExecutionPersistRecovery = Desc[ExecutionPersistRecoveryParams, ExecutionPersistRecoveryResult]{Name: MethodExecutionPersistRecovery}
	// OperationWaitPlan plans a Wait for a wait operation's call.
	OperationWaitPlan = Desc[OperationWaitParams, OperationWaitResult]{Name: MethodOperationWait}
	// WaitProgress sets a Wait's progress line.
	WaitProgress = Desc[WaitProgressParams, WaitProgressResult]{Name: MethodWaitProgress}
)
