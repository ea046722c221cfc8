package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// newEngine builds the engine on the open store. It starts nothing: the
// packages' services tell it of accepted Events from their first start, and
// startEngine runs it once the configuration is live.
func (d *Daemon) newEngine() {
	d.engine = engine.New(engine.Deps{
		DB:         d.db,
		Packages:   enginePackages{d},
		Generation: d.gen.Load,
		Logger:     d.logger.With("component", "engine"),
		Limits:     d.opts.Limits,
		Accepted:   d.events.broadcast,
		// The toolbelt's socket, which every execution is given.
		Toolbelt: filepath.Join(d.opts.StateDir, "toolbelt.sock"),
		Binary:   d.binary(),
		Getenv:   lookupIn(d.opts.Environ),
	})
}

// binary is the open-conduit executable an execution's programs call:
// Options.Self, else this one ("" when the system cannot say).
func (d *Daemon) binary() string {
	if d.opts.Self != "" {
		return d.opts.Self
	}
	self, err := os.Executable()
	if err != nil {
		d.logger.Warn("cannot find this executable; executions are not told where open-conduit is", "err", err)
		return ""
	}
	return self
}

// lookupIn reads a variable of environ (KEY=value lines), the daemon's
// environment, for a binding's pass_env names.
func lookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// watchStarts tells the engine each time s (a package declaring an
// executor) reaches running, so the executions its earlier process (or
// the daemon's earlier run) left are recovered at once. It ends with the
// session or the daemon.
func (d *Daemon) watchStarts(s *session.Session) {
	if len(s.Manifest().Provides.Executors) == 0 {
		return
	}
	go func() {
		was := session.State("")
		for {
			changed := s.Changed()
			st := s.Status().State
			if st == session.StateRunning && was != session.StateRunning && d.engine != nil {
				d.engine.PackageStarted()
			}
			if st == session.StateStopped {
				return
			}
			was = st
			select {
			case <-changed:
			case <-d.ctx.Done():
				return
			}
		}
	}()
}

// accepted is what a package's service calls after it accepted Events:
// the router looks at the log, and long polls wake (through the engine's
// Accepted, so the Events the engine accepts itself wake them too).
func (d *Daemon) accepted(uint64) {
	if d.engine == nil {
		d.events.broadcast()
		return
	}
	d.engine.Notify()
}

// workChanged is what a package's service calls after it changed a Work
// (work.cancel): the operator's long polls wake.
func (d *Daemon) workChanged() {
	if d.engine != nil {
		d.engine.WorkChanged()
	}
}

// stopEngine ends the engine's loops before the packages and the store
// close, so no routing is cut off halfway by a closing store.
func (d *Daemon) stopEngine(ctx context.Context) {
	if d.engine == nil {
		return
	}
	if err := d.engine.Stop(ctx); err != nil {
		d.logger.Warn("engine did not stop in time", "err", err)
	}
}

// enginePackages is the engine's narrow view of the running packages.
type enginePackages struct{ d *Daemon }

// Call calls method on pkg's running process; a package that is not
// running answers protocol.ErrUnavailable saying why.
func (p enginePackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	s, err := p.session(pkg)
	if err != nil {
		return err
	}
	return s.Call(ctx, method, params, result)
}

// session is pkg's running session, or protocol.ErrUnavailable saying why
// there is none.
func (p enginePackages) session(pkg string) (*session.Session, error) {
	x, ok := p.d.pkgs.get(pkg)
	if !ok {
		return nil, protocol.Errorf(protocol.ErrUnavailable, "no package %q is installed", pkg)
	}
	s := p.d.pkgs.running(x)
	if s == nil {
		return nil, protocol.Errorf(protocol.ErrUnavailable, "%v", notRunning(pkg, p.d.pkgs.snapshot(x)))
	}
	return s, nil
}

// Manifest is the manifest of pkg while it runs.
func (p enginePackages) Manifest(pkg string) (*protocol.Manifest, bool) {
	x, ok := p.d.pkgs.get(pkg)
	if !ok || p.d.pkgs.running(x) == nil {
		return nil, false
	}
	return p.d.pkgs.snapshot(x).pkg.Manifest, true
}

// RouteHandlerOwner names the running package declaring handler.
func (p enginePackages) RouteHandlerOwner(handler string) string {
	for _, m := range p.d.pkgs.runningManifests() {
		if slices.ContainsFunc(m.Provides.Routes, func(r protocol.Route) bool { return r.Handler == handler }) {
			return m.Name
		}
	}
	return ""
}

// WorkKindOwner names the running package declaring kind, with its policy.
func (p enginePackages) WorkKindOwner(kind string) (string, protocol.WorkKind) {
	for _, m := range p.d.pkgs.runningManifests() {
		for _, k := range m.Provides.WorkKinds {
			if k.Kind == kind {
				return m.Name, k
			}
		}
	}
	return "", protocol.WorkKind{}
}

// ExecutorOwner names the running package declaring executor, with its
// declaration.
func (p enginePackages) ExecutorOwner(executor string) (string, protocol.Executor) {
	for _, m := range p.d.pkgs.runningManifests() {
		for _, x := range m.Provides.Executors {
			if x.Name == executor {
				return m.Name, x
			}
		}
	}
	return "", protocol.Executor{}
}

// RecurrenceOwner names the running package declaring a recurrence kind.
func (p enginePackages) RecurrenceOwner(kind string) string {
	for _, m := range p.d.pkgs.runningManifests() {
		if slices.ContainsFunc(m.Provides.Recurrences, func(r protocol.Recurrence) bool { return r.Kind == kind }) {
			return m.Name
		}
	}
	return ""
}
