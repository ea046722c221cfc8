// Package engine turns what packages observe into Work: it routes each
// accepted Event through its scope's routes, keeps Work and its keys,
// fires timers and recurrences on one clock, and takes webhook requests
// and deliveries in. It reaches the running packages only through the
// narrow Packages interface and keeps everything in the store, so it knows
// nothing of the daemon that builds it.
package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Packages is what the engine needs of the running packages.
type Packages interface {
	// Call calls method on the running package pkg. A package that is not
	// running answers protocol.ErrUnavailable.
	Call(ctx context.Context, pkg, method string, params, result any) error
	// Manifest is the manifest of the running package pkg.
	Manifest(pkg string) (*protocol.Manifest, bool)
	// RouteHandlerOwner names the package declaring a route handler ("" for
	// none).
	RouteHandlerOwner(handler string) string
	// WorkKindOwner names the package declaring a Work kind, with its
	// policy ("" for none).
	WorkKindOwner(kind string) (string, protocol.WorkKind)
	// RecurrenceOwner names the package declaring a recurrence kind ("" for
	// none).
	RecurrenceOwner(kind string) string
}

// Clock is the engine's one clock: routing, timers and tasks read it, so a
// test can drive them all with a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now is time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Deps are what the engine is built from.
type Deps struct {
	DB       *pebblekv.DB
	Packages Packages
	// Generation is the live configuration: scopes, routes, bindings.
	Generation func() *config.Generation
	// Clock defaults to SystemClock.
	Clock  Clock
	Logger *slog.Logger
	// Limits bound the causal chains of the Events the engine accepts.
	Limits pebblekv.Limits
	// Accepted, when set, is called at every Notify: whatever else follows
	// the log (the daemon's Event long polls) wakes for the Events the
	// engine accepts itself as for the packages' ones.
	Accepted func()
	// DryRun says the daemon runs a dry run: Work of a timed kind, which
	// runs on a clock, is not created.
	DryRun bool
	// Toolbelt is the toolbelt's Unix socket path, given to every
	// execution.
	Toolbelt string
	// Binary is the open-conduit executable, given to every execution
	// (protocol.EnvBinary).
	Binary string
	// Getenv reads the daemon's environment, for a binding's pass_env
	// names (default: none passed).
	Getenv func(string) (string, bool)
}

// Engine is the running engine. Build it with New, then Start it.
type Engine struct {
	d      Deps
	notify chan struct{}
	// changes is closed and replaced at every accepted Event and Work
	// change, for long polls.
	changes signal

	router    *router
	timers    *timers
	ingress   *ingress
	reconcile *reconciler
	jobs      *jobs
	exec      *scheduler

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds an engine on d.
func New(d Deps) *Engine {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{d: d, notify: make(chan struct{}, 1)}
	e.changes.init()
	e.router = newRouter(e)
	e.timers = newTimers(e)
	e.ingress = newIngress(e)
	e.reconcile = newReconciler(e)
	e.jobs = newJobs(e)
	e.exec = newScheduler(e)
	return e
}

// Start runs the engine's loops until Stop or ctx's end.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return
	}
	ctx, e.cancel = context.WithCancel(ctx)
	for _, run := range []func(context.Context){e.router.run, e.timers.run, e.ingress.run, e.reconcile.run, e.exec.run} {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			run(ctx)
		}()
	}
}

// Stop ends the loops and waits for them, or for ctx.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify says Events were accepted: the router looks at the log now rather
// than at its next poll, and Changes' waiters wake. It never blocks.
func (e *Engine) Notify() {
	select {
	case e.notify <- struct{}{}:
	default:
	}
	e.changes.broadcast()
	if e.d.Accepted != nil {
		e.d.Accepted()
	}
}

// WorkChanged says a Work changed outside the engine (a package cancelled
// one): Changes' waiters wake, and the scheduler cancels the Wait and
// stops the execution of a Work that closed. It never blocks.
func (e *Engine) WorkChanged() {
	e.exec.workChanged()
	e.changes.broadcast()
}

// PackageStarted says a package (re)started: the scheduler looks at once
// for the executions it should recover (those held back since their
// package went away too) and the Work it may now start. It never blocks.
func (e *Engine) PackageStarted() { e.exec.released() }

// Changes is closed at the next accepted Event or Work change (a long poll
// waits on it, then reads what changed, then asks again).
func (e *Engine) Changes() <-chan struct{} { return e.changes.wait() }

// signal is a channel closed and replaced at each broadcast.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) init() { s.ch = make(chan struct{}) }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) broadcast() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}
