package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Running Work's pace.
const (
	// execIdle is the longest the scheduler sleeps without looking at the
	// store: a backstop should a wake ever be missed.
	execIdle = time.Minute
	// execPoll is how soon the scheduler looks again while something waits
	// for a package to run (an execution to recover) or for a running
	// Work to settle (its Wait fell due meanwhile).
	execPoll = time.Second
	// retryBase is the wait before the second attempt after a failed one;
	// it doubles with each failure in a row.
	retryBase = 5 * time.Second
	// maxFailedInRow attempts failed in a row fail the Work.
	maxFailedInRow = 3
	// recoverRetryMax bounds the backoff of a recovery the package could
	// not take (it went away again).
	recoverRetryMax = 30 * time.Second
	// waitRound bounds one executor.wait call: the observation is asked
	// again after it (a call without a deadline would take the session's
	// short default one).
	waitRound = 10 * time.Minute
	// stopWait bounds executor.stop, which waits for the physical stop.
	stopWait = 2 * time.Minute
	// execBatch is how many records one look at the store reads at once.
	execBatch = 256
)

// Executor pools.
const (
	// PoolAgents is the default pool (agent turns), bounded by
	// settings.concurrency.
	PoolAgents = ""
	// PoolJobs is the jobs pool, bounded by settings.job_concurrency.
	PoolJobs = "jobs"
)

// scheduler starts an attempt of each runnable Work (pending, its binding
// naming an executor whose package runs) within its pool's limit, observes
// each running execution until it settles, recovers the executions a
// restart or a package's crash left running, and wakes Waits whose due
// time passed. Its loop looks at the store when woken (any Work change,
// a settle, a Wait declared) and on its clock; each execution is observed
// by one goroutine.
type scheduler struct {
	e    *Engine
	wake chan struct{}

	mu sync.Mutex
	// observed are the executions a goroutine runs, waits on, recovers or
	// stops; the others still running in the store need a recovery.
	observed map[string]bool
	// retryAt holds a recovery back after its package went away again.
	retryAt map[string]recoverRetry
	// stopping are executions whose Work closed, being stopped.
	stopping map[string]bool
	// adm are the start gates' admissions in flight or backing off.
	adm admissions
	// sweep says a Work changed outside the engine: Waits of closed Work
	// are looked for and cancelled.
	sweep bool
	// begun and passed count the loop's looks at the store, begun and
	// finished, so a test can wait for a look that began after a change.
	begun, passed atomic.Int64
	// ctx is the loop's, for the calls made after an execution settled.
	ctx context.Context
}

type recoverRetry struct {
	at    time.Time
	delay time.Duration
}

func newScheduler(e *Engine) *scheduler {
	return &scheduler{e: e, wake: make(chan struct{}, 1), observed: map[string]bool{},
		retryAt: map[string]recoverRetry{}, stopping: map[string]bool{}, sweep: true}
}

// executors is the Packages' view of who declares an executor; nil when
// Packages has none, and then no Work runs.
func (e *Engine) executors() Executors {
	x, _ := e.d.Packages.(Executors)
	return x
}

// kick wakes the scheduler's loop. It never blocks.
func (s *scheduler) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run looks at the store until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	if s.e.executors() == nil {
		return
	}
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	for {
		changed := s.e.changes.wait()
		s.begun.Add(1)
		next := s.pass(ctx)
		s.passed.Add(1)
		wait := max(next.Sub(s.e.d.Clock.Now()), 0)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-changed:
		case <-s.e.d.Clock.After(wait):
		}
	}
}

// pass does what is due now and says when to look again.
func (s *scheduler) pass(ctx context.Context) time.Time {
	now := s.e.d.Clock.Now()
	next := now.Add(execIdle)
	soon := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	if err := s.wakeDue(now, soon); err != nil && ctx.Err() == nil {
		s.e.d.Logger.Warn("waking due Waits", "err", err)
		soon(now.Add(execPoll))
	}
	s.sweepWaits(ctx)
	running, err := s.running()
	if err != nil {
		if ctx.Err() == nil {
			s.e.d.Logger.Warn("reading running executions", "err", err)
		}
		return now.Add(execPoll)
	}
	s.watch(ctx, running, now, soon)
	if err := s.startRunnable(ctx, running, now, soon); err != nil && ctx.Err() == nil {
		s.e.d.Logger.Warn("starting Work", "err", err)
		soon(now.Add(execPoll))
	}
	return next
}

func (s *scheduler) running() ([]pebblekv.Execution, error) {
	var xs []pebblekv.Execution
	err := s.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		xs, err = rd.RunningExecutions()
		return err
	})
	return xs, err
}

// watch looks at each running execution no goroutine observes: one whose
// Work closed meanwhile (cancelled) is stopped; one whose package runs is
// recovered (unless its last recovery waits out a retry).
func (s *scheduler) watch(ctx context.Context, running []pebblekv.Execution, now time.Time, soon func(time.Time)) {
	for _, x := range running {
		if s.closedWork(x) {
			s.stopClosed(ctx, x)
		}
		s.mu.Lock()
		busy, r := s.observed[x.ID], s.retryAt[x.ID]
		s.mu.Unlock()
		if busy {
			continue
		}
		if now.Before(r.at) {
			soon(r.at)
			continue
		}
		if pkg, _ := s.e.executors().ExecutorOwner(x.Executor); pkg != x.Package {
			// Its package is not running: look again soon.
			soon(now.Add(execPoll))
			continue
		}
		s.observe(ctx, x.ID, func(ctx context.Context) { s.recover(ctx, x) })
	}
}

// closedWork reports whether x's Work is no longer running (cancelled
// meanwhile).
func (s *scheduler) closedWork(x pebblekv.Execution) bool {
	var w pebblekv.Work
	var found bool
	if err := s.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		w, found, err = rd.Work(x.Work)
		return err
	}); err != nil {
		return false
	}
	return !found || !w.Open()
}

// observe runs fn for execution id in its own goroutine, marked observed
// while it runs; the loop is woken when it ends.
func (s *scheduler) observe(ctx context.Context, id string, fn func(context.Context)) {
	s.mu.Lock()
	if s.observed[id] {
		s.mu.Unlock()
		return
	}
	s.observed[id] = true
	s.mu.Unlock()
	s.e.wg.Add(1)
	go func() {
		defer s.e.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.observed, id)
			s.mu.Unlock()
			s.kick()
		}()
		fn(ctx)
	}()
}

// backOff holds id's recovery back: its package went away again.
func (s *scheduler) backOff(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.retryAt[id]
	r.delay = min(max(2*r.delay, execPoll), recoverRetryMax)
	r.at = s.e.d.Clock.Now().Add(r.delay)
	s.retryAt[id] = r
}

// released lets every held-back recovery go at the next look, which it
// asks for: a package started, so the one they wait for may be back.
func (s *scheduler) released() {
	s.mu.Lock()
	for id, r := range s.retryAt {
		r.at = time.Time{}
		s.retryAt[id] = r
	}
	s.mu.Unlock()
	s.kick()
}

// forget drops what the scheduler kept about a settled execution.
func (s *scheduler) forget(id string) {
	s.mu.Lock()
	delete(s.retryAt, id)
	delete(s.stopping, id)
	s.mu.Unlock()
}

// gone reports whether err says the package went away (its process died,
// or it is not running): the execution may live on, to be recovered.
func gone(err error) bool {
	return errors.Is(err, protocol.ErrTransport) || errors.Is(err, protocol.ErrUnavailable) ||
		errors.Is(err, protocol.ErrShuttingDown)
}

// poolLimit is the concurrency bound of pool in g.
func poolLimit(g *config.Generation, pool string) int {
	var st config.Settings
	if g != nil && g.Config != nil {
		st = g.Config.Settings
	}
	if pool == PoolJobs {
		return st.JobConcurrencyLimit()
	}
	return st.ConcurrencyLimit()
}

// bindingOf is the binding named name in scope of g.
func bindingOf(g *config.Generation, scope, name string) (config.Binding, bool) {
	sc, ok := scopeOf(g, scope)
	if !ok || name == "" {
		return config.Binding{}, false
	}
	for _, b := range sc.Bindings {
		if b.Name == name {
			return b, true
		}
	}
	return config.Binding{}, false
}

// hasExecutors reports whether any binding of g names an executor: with
// none, no Work is runnable and the pending Work is not read.
func hasExecutors(g *config.Generation) bool {
	if g == nil || g.Config == nil {
		return false
	}
	for _, sc := range g.Config.Scopes {
		for _, b := range sc.Bindings {
			if b.Executor != "" {
				return true
			}
		}
	}
	return false
}
