package sdk

import (
	"context"
	"fmt"
	"reflect"

	"github.com/open-conduit/open-conduit/protocol"
)

// Wait and run-environment wire types, so a package needs only this one.
type (
	// WaitPlan is the Wait a wait operation declares: a description and a
	// timeout in seconds (0: none).
	WaitPlan = protocol.WaitPlan
	// DependencyFilterParams ask whether an Event that joined a waiting
	// Work satisfies the package's Wait.
	DependencyFilterParams = protocol.DependencyFilterParams
	// RunEnvironmentParams ask for the package's environment layer of one
	// run of Work.
	RunEnvironmentParams = protocol.RunEnvironmentParams
)

// Waiter makes a wait operation from a typed function: its input is
// checked and decoded as Handler's is, and the WaitPlan fn returns becomes
// the Work's Wait, owned by this package (operation.wait). Pass it to
// Extension.Operation.
func Waiter[In any](fn func(ctx context.Context, r *Request, in In) (WaitPlan, error)) OperationHandler {
	if fn == nil {
		panic("sdk: Waiter: nil function")
	}
	h := Handler(func(ctx context.Context, r *Request, in In) (WaitPlan, error) { return fn(ctx, r, in) })
	h.op.kind = protocol.OperationWait
	return h
}

// DependencyFilterFunc answers dependency.filter: does the Event that
// joined a waiting Work satisfy the package's Wait? The host asks it
// inside the routing transaction, bounded to 250 ms: it must be pure and
// may not call the host. An error counts as false.
type DependencyFilterFunc func(ctx context.Context, r *Request, p DependencyFilterParams) (bool, error)

// DependencyFilter makes only the Events fn matches wake the Waits this
// package's wait operations declare, and declares dependency_filter;
// without it any Event joining the Work wakes them. The manifest then
// needs a wait operation (Waiter). Registering twice panics.
func (x *Extension) DependencyFilter(fn DependencyFilterFunc) *Extension {
	once("DependencyFilter", x.Manifest.Provides.DependencyFilter, fn == nil)
	x.Manifest.Provides.DependencyFilter = true
	return x.Method(protocol.MethodDependencyFilter, typed(protocol.MethodDependencyFilter,
		func(ctx context.Context, r *Request, p DependencyFilterParams) (protocol.DependencyFilterResult, error) {
			ok, err := fn(ctx, r, p)
			return protocol.DependencyFilterResult{Match: ok}, err
		}))
}

// RunEnvironmentFunc answers run.environment: the variables this package
// adds to the environment of one run of Work in a scope that uses it (the
// binding's connection named in the params). Values are secret-like: the
// host never logs them. An error fails the run before it launches.
type RunEnvironmentFunc func(ctx context.Context, r *Request, p RunEnvironmentParams) (map[string]string, error)

// RunEnvironment serves fn as the package's environment layer for each
// run of Work in the scopes that use it, and declares run_environment.
// A layer may not set the host's own variables (protocol.HostEnv); the
// SDK refuses such an answer before sending it. Registering twice panics.
func (x *Extension) RunEnvironment(fn RunEnvironmentFunc) *Extension {
	once("RunEnvironment", x.Manifest.Provides.RunEnvironment, fn == nil)
	x.Manifest.Provides.RunEnvironment = true
	return x.Method(protocol.MethodRunEnvironment, typed(protocol.MethodRunEnvironment,
		func(ctx context.Context, r *Request, p RunEnvironmentParams) (protocol.RunEnvironmentResult, error) {
			env, err := fn(ctx, r, p)
			if err != nil {
				return protocol.RunEnvironmentResult{}, err
			}
			if err := protocol.CheckRunEnvironment(x.Manifest.Name, env); err != nil {
				return protocol.RunEnvironmentResult{}, err
			}
			return protocol.RunEnvironmentResult{Env: env}, nil
		}))
}

// operationWait serves operation.wait for a wait operation (Waiter).
func (s *server) operationWait(ctx context.Context, p protocol.OperationWaitParams) (protocol.OperationWaitResult, error) {
	op, ok := s.x.operations[p.Operation]
	if !ok || op.kind != protocol.OperationWait {
		return protocol.OperationWaitResult{}, protocol.Errorf(protocol.ErrUndeclared, "%s declares no wait operation %q", s.x.Manifest.Name, p.Operation)
	}
	r := &Request{Host: s.host, Authority: p.Authority, RequestID: p.RequestID,
		Method: protocol.MethodOperationWait, Name: p.Operation}
	out, err := op.call(ctx, r, p.Input)
	if err != nil {
		return protocol.OperationWaitResult{}, err
	}
	plan, ok := out.(WaitPlan)
	if !ok {
		return protocol.OperationWaitResult{}, fmt.Errorf("sdk: wait operation %q returned %s, not a WaitPlan", p.Operation, reflect.TypeOf(out))
	}
	return protocol.OperationWaitResult{Wait: plan}, nil
}

// hasKind reports whether any registered operation is of kind.
func (x *Extension) hasKind(kind string) bool {
	for _, op := range x.operations {
		if op.kind == kind {
			return true
		}
	}
	return false
}
