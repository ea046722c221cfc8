package sdk

import (
	"context"
	"fmt"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Executor wire types, so an executor needs only this package.
type (
	// Executor declares an executor in the manifest; Extension.Executor
	// writes it for you.
	Executor = protocol.Executor
	// ExecutorRunParams starts one attempt of a Work: the execution and its
	// lease epoch, the Work, its inputs, what woke it, the binding, the
	// environment to give the process and the toolbelt endpoint.
	ExecutorRunParams = protocol.ExecutorRunParams
	// ExecutorRunResult acknowledges a started execution, with its first
	// recovery metadata.
	ExecutorRunResult = protocol.ExecutorRunResult
	// ExecutionRef names an execution under its lease epoch, and its
	// executor.
	ExecutionRef = protocol.ExecutionRef
	// ExecutorWaitResult is how an execution settled.
	ExecutorWaitResult = protocol.ExecutorWaitResult
	// ExecutorRecoverParams adopts an execution from its last persisted
	// recovery metadata, under a new lease epoch.
	ExecutorRecoverParams = protocol.ExecutorRecoverParams
	// ExecutorStopParams stops an execution, with its recovery metadata
	// for one the current process did not start.
	ExecutorStopParams = protocol.ExecutorStopParams
	// ExecutorStopResult is the physical-stop evidence.
	ExecutorStopResult = protocol.ExecutorStopResult
	// ExecutorInjectParams hands a running execution one line of input.
	ExecutorInjectParams = protocol.ExecutorInjectParams
	// ExecutorResumeParams resumes a waiting execution with new input.
	ExecutorResumeParams = protocol.ExecutorResumeParams
	// ExecutorLiveParams asks for a running execution's output so far.
	ExecutorLiveParams = protocol.ExecutorLiveParams
	// ExecutorLiveResult is a running execution's outputs so far.
	ExecutorLiveResult = protocol.ExecutorLiveResult
	// LiveOutput is one output of a live execution.
	LiveOutput = protocol.LiveOutput
	// RunBinding is the binding a Work runs under, as its executor sees it.
	RunBinding = protocol.RunBinding
	// Toolbelt is where an execution reaches the host's toolbelt.
	Toolbelt = protocol.Toolbelt
	// Wake is what ended a Work's Wait and so started this attempt.
	Wake = protocol.Wake
)

// Outcome states an executor's Wait answers.
const (
	OutcomeCompleted = protocol.OutcomeCompleted
	OutcomeFailed    = protocol.OutcomeFailed
	OutcomeHandoff   = protocol.OutcomeHandoff
)

// Executor refusals.
var (
	// ErrNotAdoptable: Recover cannot adopt the execution (its process is
	// gone, or its metadata names something else).
	ErrNotAdoptable = protocol.ErrNotAdoptable
	// ErrNotLive: Live has no output to show.
	ErrNotLive = protocol.ErrNotLive
	// ErrNotAccepting: the execution takes no input now (Inject, Resume).
	ErrNotAccepting = protocol.ErrNotAccepting
)

// ExecutorFuncs are an executor's methods. Run, Wait and Recover are
// required; each optional one set declares what it serves: Stop, Forget
// and Live the controls of those names, Interrupt, Inject and Resume the
// capabilities of those names. An execution outlives the process that started it, so every
// method but Run may be asked about an execution this process did not
// start: Recover adopts one, and Stop carries its recovery metadata.
type ExecutorFuncs struct {
	// Run starts an execution and returns at once; its result carries the
	// first recovery metadata.
	Run func(ctx context.Context, r *Request, p ExecutorRunParams) (ExecutorRunResult, error)
	// Wait observes an execution until it settles. The host cancels it to
	// stop observing; the execution goes on.
	Wait func(ctx context.Context, r *Request, ref ExecutionRef) (ExecutorWaitResult, error)
	// Recover adopts an execution from its recovery metadata under a new
	// epoch, or refuses ErrNotAdoptable.
	Recover func(ctx context.Context, r *Request, p ExecutorRecoverParams) error
	// Stop stops an execution and answers physical-stop evidence.
	Stop func(ctx context.Context, r *Request, p ExecutorStopParams) (ExecutorStopResult, error)
	// Interrupt asks a running execution to settle soon.
	Interrupt func(ctx context.Context, r *Request, ref ExecutionRef) error
	// Inject hands a running execution one line of input.
	Inject func(ctx context.Context, r *Request, p ExecutorInjectParams) error
	// Resume hands a waiting execution new input.
	Resume func(ctx context.Context, r *Request, p ExecutorResumeParams) error
	// Live answers a running execution's output so far.
	Live func(ctx context.Context, r *Request, p ExecutorLiveParams) (ExecutorLiveResult, error)
	// Forget drops what the package keeps of a settled execution (its
	// records, its files). The host sends it once the execution settled,
	// best effort, and may send it again: forgetting an unknown execution
	// is no error.
	Forget func(ctx context.Context, r *Request, ref ExecutionRef) error
}

// ExecutorOption sets an executor's declaration beyond what its funcs say.
type ExecutorOption func(*Executor)

// JobsPool counts the executor's runs against the daemon's jobs
// concurrency rather than the agent turns'.
func JobsPool() ExecutorOption { return func(e *Executor) { e.Pool = "jobs" } }

// ExecutorFields documents the executor's binding config fields for the
// operator.
func ExecutorFields(fields ...Field) ExecutorOption {
	return func(e *Executor) { e.Fields = append(e.Fields, fields...) }
}

// ExecutorToolbelt declares how the executor's processes reach the
// toolbelt: any of "none", "cli", "mcp", "sdk".
func ExecutorToolbelt(labels ...string) ExecutorOption {
	return func(e *Executor) { e.Capabilities.Toolbelt = append(e.Capabilities.Toolbelt, labels...) }
}

// Executor registers an executor named name served by f and declares it,
// with the controls and capabilities its optional funcs serve. The host
// names the executor in every call, so one package may serve several.
// Registering a name twice, or without Run, Wait or Recover, panics.
func (x *Extension) Executor(name string, f ExecutorFuncs, opts ...ExecutorOption) *Extension {
	switch {
	case f.Run == nil || f.Wait == nil || f.Recover == nil:
		panic(fmt.Sprintf("sdk: Executor %q: Run, Wait and Recover are required", name))
	case x.executors[name] != nil:
		panic(fmt.Sprintf("sdk: Executor %q: registered twice", name))
	}
	if x.executors == nil {
		x.executors = make(map[string]*ExecutorFuncs)
		x.serveExecutors()
	}
	d := Executor{Name: name}
	if f.Stop != nil {
		d.Controls = append(d.Controls, protocol.ControlStop)
	}
	if f.Forget != nil {
		d.Controls = append(d.Controls, protocol.ControlForget)
	}
	if f.Live != nil {
		d.Controls = append(d.Controls, protocol.ControlLive)
	}
	d.Capabilities.Interrupt = f.Interrupt != nil
	d.Capabilities.Inject = f.Inject != nil
	d.Capabilities.Resume = f.Resume != nil
	for _, o := range opts {
		o(&d)
	}
	x.executors[name] = &f
	x.Manifest.Provides.Executors = append(x.Manifest.Provides.Executors, d)
	return x
}

// serveExecutors registers the executor methods, each dispatching by the
// executor its params name.
func (x *Extension) serveExecutors() {
	x.Method(protocol.MethodExecutorRun, typed(protocol.MethodExecutorRun,
		func(ctx context.Context, r *Request, p ExecutorRunParams) (ExecutorRunResult, error) {
			f, err := x.executor(r, p.Executor, "run")
			if err != nil {
				return ExecutorRunResult{}, err
			}
			return f.Run(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorWait, typed(protocol.MethodExecutorWait,
		func(ctx context.Context, r *Request, p ExecutionRef) (ExecutorWaitResult, error) {
			f, err := x.executor(r, p.Executor, "wait")
			if err != nil {
				return ExecutorWaitResult{}, err
			}
			return f.Wait(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorRecover, typed(protocol.MethodExecutorRecover,
		func(ctx context.Context, r *Request, p ExecutorRecoverParams) (protocol.ExecutorRecoverResult, error) {
			f, err := x.executor(r, p.Executor, "recover")
			if err != nil {
				return protocol.ExecutorRecoverResult{}, err
			}
			return protocol.ExecutorRecoverResult{}, f.Recover(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorStop, typed(protocol.MethodExecutorStop,
		func(ctx context.Context, r *Request, p ExecutorStopParams) (ExecutorStopResult, error) {
			f, err := x.executor(r, p.Executor, protocol.ControlStop)
			if err == nil && f.Stop == nil {
				err = undeclaredControl(r.Name, protocol.ControlStop)
			}
			if err != nil {
				return ExecutorStopResult{}, err
			}
			return f.Stop(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorInterrupt, typed(protocol.MethodExecutorInterrupt,
		func(ctx context.Context, r *Request, p ExecutionRef) (protocol.ExecutorControlResult, error) {
			f, err := x.executor(r, p.Executor, "interrupt")
			if err == nil && f.Interrupt == nil {
				err = undeclaredControl(r.Name, "interrupt")
			}
			if err != nil {
				return protocol.ExecutorControlResult{}, err
			}
			return protocol.ExecutorControlResult{}, f.Interrupt(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorInject, typed(protocol.MethodExecutorInject,
		func(ctx context.Context, r *Request, p ExecutorInjectParams) (protocol.ExecutorControlResult, error) {
			f, err := x.executor(r, p.Executor, "inject")
			if err == nil && f.Inject == nil {
				err = undeclaredControl(r.Name, "inject")
			}
			if err != nil {
				return protocol.ExecutorControlResult{}, err
			}
			return protocol.ExecutorControlResult{}, f.Inject(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorResume, typed(protocol.MethodExecutorResume,
		func(ctx context.Context, r *Request, p ExecutorResumeParams) (protocol.ExecutorControlResult, error) {
			f, err := x.executor(r, p.Executor, "resume")
			if err == nil && f.Resume == nil {
				err = undeclaredControl(r.Name, "resume")
			}
			if err != nil {
				return protocol.ExecutorControlResult{}, err
			}
			return protocol.ExecutorControlResult{}, f.Resume(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorForget, typed(protocol.MethodExecutorForget,
		func(ctx context.Context, r *Request, p ExecutionRef) (protocol.ExecutorControlResult, error) {
			f, err := x.executor(r, p.Executor, protocol.ControlForget)
			if err == nil && f.Forget == nil {
				err = undeclaredControl(r.Name, protocol.ControlForget)
			}
			if err != nil {
				return protocol.ExecutorControlResult{}, err
			}
			return protocol.ExecutorControlResult{}, f.Forget(ctx, r, p)
		}))
	x.Method(protocol.MethodExecutorLive, typed(protocol.MethodExecutorLive,
		func(ctx context.Context, r *Request, p ExecutorLiveParams) (ExecutorLiveResult, error) {
			f, err := x.executor(r, p.Executor, protocol.ControlLive)
			if err == nil && f.Live == nil {
				err = undeclaredControl(r.Name, protocol.ControlLive)
			}
			if err != nil {
				return ExecutorLiveResult{}, err
			}
			return f.Live(ctx, r, p)
		}))
}

// executor finds the executor a call names and records it as the
// request's Name. A call naming none goes to the package's only executor,
// so a host that leaves the name out still reaches it.
func (x *Extension) executor(r *Request, name, what string) (*ExecutorFuncs, error) {
	if name == "" && len(x.executors) == 1 {
		for only := range x.executors {
			name = only
		}
	}
	f, ok := x.executors[name]
	if !ok {
		if name == "" {
			return nil, protocol.Errorf(protocol.ErrInvalidParams, "executor.%s names no executor, and %s serves %d: name one", what, x.Manifest.Name, len(x.executors))
		}
		return nil, protocol.Errorf(protocol.ErrUndeclared, "executor %q is not declared by %s", name, x.Manifest.Name)
	}
	r.Name = name
	return f, nil
}

func undeclaredControl(executor, control string) error {
	return protocol.Errorf(protocol.ErrUndeclared, "executor %q does not declare %s", executor, control)
}

// PersistRecovery stores an execution's recovery metadata (any value that
// marshals to JSON, at most protocol.MaxRecoveryBytes) with the host, so a
// later process of the package can adopt the execution (Recover). The host
// keeps it only under the execution's current lease: a ref naming an older
// epoch is ErrConflict, and the execution's executor must be this
// package's.
func (h *Host) PersistRecovery(ctx context.Context, ref ExecutionRef, metadata any, opts ...RecoveryOption) error {
	raw, ok := metadata.(jsontext.Value)
	if !ok {
		b, err := json.Marshal(metadata)
		if err != nil {
			return protocol.Errorf(protocol.ErrInvalid, "recovery metadata of execution %s does not marshal to JSON: %v", ref.Execution, err)
		}
		raw = b
	}
	if len(raw) > protocol.MaxRecoveryBytes {
		return protocol.Errorf(protocol.ErrTooLarge, "recovery metadata of execution %s is %d bytes, over the %d-byte bound: keep only what adoption needs",
			ref.Execution, len(raw), protocol.MaxRecoveryBytes)
	}
	p := protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref, Recovery: raw}
	for _, o := range opts {
		o(&p)
	}
	_, err := invoke(ctx, h, protocol.ExecutionPersistRecovery, p)
	return err
}

// RecoveryOption adds to what PersistRecovery sends besides the metadata.
type RecoveryOption func(*protocol.ExecutionPersistRecoveryParams)

// DetachedProcess names the process the execution runs in, which the
// package started in a session of its own so that it outlives the package
// (pid, and its start time from field 22 of /proc/PID/stat). The host
// spares it, and what it starts, when it stops or reaps the package's
// processes; without it, a process carrying the package's environment
// dies with the package.
func DetachedProcess(pid int, startTicks uint64) RecoveryOption {
	return func(p *protocol.ExecutionPersistRecoveryParams) {
		p.Process = &protocol.ExecutionProcess{PID: pid, StartTicks: startTicks}
	}
}

// WaitProgress sets the progress line operators see on a Work's active
// Wait, one a wait operation of this package declared ("" clears it). The
// host cuts a long line to its bound.
func (h *Host) WaitProgress(ctx context.Context, work, progress string) error {
	_, err := invoke(ctx, h, protocol.WaitProgress, protocol.WaitProgressParams{Work: work, Progress: progress})
	return err
}
