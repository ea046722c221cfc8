package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// runEnvWait bounds one run.environment call: a layer is asked before
// each attempt launches, so a package that hangs holds up only that
// attempt, which then fails.
const runEnvWait = 10 * time.Second

// Installed is the Packages' optional view of every installed package,
// running or not. What a package declares decides whether it is asked for
// a run's environment layer or about its Waits even while it is away (the
// call then fails, as any failure does); without this view only running
// packages' declarations count.
type Installed interface {
	// InstalledManifests are the manifests of the installed packages,
	// sorted by name.
	InstalledManifests() []*protocol.Manifest
}

// declared is pkg's manifest: from the installed packages when Packages
// lists them, else while pkg runs.
func (e *Engine) declared(pkg string) (*protocol.Manifest, bool) {
	in, ok := e.d.Packages.(Installed)
	if !ok {
		return e.d.Packages.Manifest(pkg)
	}
	for _, m := range in.InstalledManifests() {
		if m.Name == pkg {
			return m, true
		}
	}
	return nil, false
}

// envLayers are the packages asked for x's environment layers, in the
// order their layers apply: every package declaring run_environment that
// x's scope uses, by name.
func (e *Engine) envLayers(x pebblekv.Execution) []string {
	var ms []*protocol.Manifest
	if in, ok := e.d.Packages.(Installed); ok {
		ms = in.InstalledManifests()
	}
	g := e.d.Generation()
	var pkgs []string
	for _, m := range ms {
		if m.Provides.RunEnvironment && g != nil && g.For(m).Uses(x.Scope) {
			pkgs = append(pkgs, m.Name)
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// layerEnv asks each package whose layer x gets (envLayers) for it with
// run.environment and merges the layers into p.Env: the binding's pass_env
// values first, then each layer in package-name order (a later layer's
// name wins); the host's own variables (protocol.HostEnv) no layer may
// set. Any failure is the attempt's: it fails before executor.run. The
// values are never logged.
func (e *Engine) layerEnv(ctx context.Context, x pebblekv.Execution, p *protocol.ExecutorRunParams) error {
	pkgs := e.envLayers(x)
	if len(pkgs) == 0 {
		return nil
	}
	b, _ := bindingOf(e.d.Generation(), x.Scope, x.Binding)
	params := protocol.RunEnvironmentParams{Scope: x.Scope, Work: p.Work, Execution: x.ID, Attempt: x.Attempt,
		Binding: x.Binding, Connection: b.Connection}
	merged := map[string]string{}
	for _, pkg := range pkgs {
		var res protocol.RunEnvironmentResult
		cctx, cancel := context.WithTimeout(ctx, runEnvWait)
		err := e.d.Packages.Call(cctx, pkg, protocol.MethodRunEnvironment, params, &res)
		cancel()
		if err != nil {
			return fmt.Errorf("the environment layer of %s: %w", pkg, err)
		}
		if err := protocol.CheckRunEnvironment(pkg, res.Env); err != nil {
			return err
		}
		maps.Copy(merged, res.Env)
	}
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	maps.Copy(p.Env, merged)
	return nil
}

// filterWake asks wt's owner, when it declares dependency_filter, whether
// ev satisfies wt, inside the routing transaction (bounded, no
// callbacks). A Wait of the builtin wait, or of a package declaring no
// filter, is satisfied by any Event that joins its Work. A failure, a
// timeout, or a payload the owner does not read counts as no match: ev
// stays an input of the Work, and a later matching Event still wakes it.
func (e *Engine) filterWake(ctx context.Context, wt pebblekv.Wait, ev pebblekv.Event) bool {
	if wt.Owner == "" {
		return true
	}
	m, ok := e.declared(wt.Owner)
	if !ok || !m.Provides.DependencyFilter {
		return true
	}
	if st := m.PayloadStatus(ev.Payload.Schema); !st.Readable() {
		e.d.Logger.Info("the Wait's owner does not read the Event's payload schema, so it was not asked: no match",
			"wait", wt.ID, "owner", wt.Owner, "event", ev.ID, "schema", ev.Payload.Schema, "status", st)
		return false
	}
	var res protocol.DependencyFilterResult
	err := e.callInTx(ctx, wt.Owner, protocol.MethodDependencyFilter, protocol.DependencyFilterParams{
		Wait:  protocol.DependencyWait{ID: wt.ID, Work: wt.Work, Owner: wt.Owner, Description: wt.Description},
		Event: ev.Wire(),
	}, &res)
	if err != nil {
		e.d.Logger.Warn("dependency.filter failed; it counts as no match, and a later Event may still wake the Wait",
			"wait", wt.ID, "owner", wt.Owner, "event", ev.ID, "err", err)
		return false
	}
	return res.Match
}

// forgetSettled tells x's executor, when it declares the forget control,
// that x settled (executor.forget), so it may drop what it keeps of it.
// Best effort: a failure is logged, and nothing else depends on it.
func (s *scheduler) forgetSettled(x pebblekv.Execution) {
	_, d := s.e.executors().ExecutorOwner(x.Executor)
	if !slices.Contains(d.Controls, protocol.ControlForget) {
		return
	}
	s.e.wg.Add(1)
	go func() {
		defer s.e.wg.Done()
		ctx, cancel := context.WithTimeout(s.runCtx(), forgetWait)
		defer cancel()
		var res protocol.ExecutorControlResult
		err := s.e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorForget,
			protocol.ExecutorForgetParams{Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor}, &res)
		if err != nil {
			s.e.d.Logger.Warn("executor.forget of a settled execution failed; the executor keeps its state", "execution", x.ID,
				"package", x.Package, "err", err)
		}
	}()
}

// forgetWait bounds one executor.forget call.
const forgetWait = 30 * time.Second

// runCtx is the context the scheduler's loop runs under (ended by the
// engine's Stop); Background before the loop began.
func (s *scheduler) runCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}
