package engine

import (
	"context"
	"sync"
	"time"
)

// jobs are the recurring jobs that are not timers (the packages' declared
// tasks). The timers' scheduler loop dispatches them, so tasks and timers
// wake on one clock and one scheduler; each run goes on in its own
// goroutine, so a slow job holds up neither the timers nor another job.
type jobs struct {
	e *Engine

	mu  sync.Mutex
	all map[*job]struct{}
}

// job is one recurring job.
type job struct {
	name  string
	every time.Duration
	fn    func(context.Context) error

	// next and running are guarded by jobs.mu.
	next    time.Time
	running bool

	// stopped ends a run in progress when the job is stopped.
	stopped context.Context
	stop    context.CancelFunc
	runs    sync.WaitGroup
}

func newJobs(e *Engine) *jobs { return &jobs{e: e, all: map[*job]struct{}{}} }

// Every runs fn every interval on the engine's clock, the first time one
// interval from now, from Start until the returned stop (or the engine's
// Stop). A run is bounded by its interval (its context ends then, in real
// time), and an occurrence that comes while the previous run still goes on
// is skipped, so a hung run never piles up. fn's error is logged under
// name. stop ends a run in progress and waits for it; calling it again
// does nothing. Every panics on a non-positive interval, as a ticker does.
func (e *Engine) Every(name string, every time.Duration, fn func(ctx context.Context) error) (stop func()) {
	if every <= 0 {
		panic("engine: Every " + name + ": the interval must be positive")
	}
	j := &job{name: name, every: every, fn: fn, next: e.d.Clock.Now().Add(every)}
	j.stopped, j.stop = context.WithCancel(context.Background())
	e.jobs.mu.Lock()
	e.jobs.all[j] = struct{}{}
	e.jobs.mu.Unlock()
	e.TimersChanged()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.jobs.mu.Lock()
			delete(e.jobs.all, j)
			e.jobs.mu.Unlock()
			j.stop()
			j.runs.Wait()
		})
	}
}

// Now is the engine's clock's time: what the scheduler reads, so the
// times a job's owner records agree with it.
func (e *Engine) Now() time.Time { return e.d.Clock.Now() }

// dispatch starts every job due at now that is not still running, and
// answers the earliest next due time (false when there are no jobs). A
// job that fell behind (the daemon was busy, the clock jumped) runs once
// and resumes its cadence from now.
func (js *jobs) dispatch(ctx context.Context, now time.Time) (time.Time, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	var next time.Time
	for j := range js.all {
		if !j.next.After(now) {
			j.next = j.next.Add(j.every)
			if !j.next.After(now) {
				j.next = now.Add(j.every)
			}
			if !j.running && ctx.Err() == nil {
				j.running = true
				js.start(ctx, j)
			}
		}
		if next.IsZero() || j.next.Before(next) {
			next = j.next
		}
	}
	return next, !next.IsZero()
}

// start runs j once in its own goroutine; the caller holds js.mu and the
// scheduler's ctx is live, so the engine's Stop waits for the run.
func (js *jobs) start(ctx context.Context, j *job) {
	j.runs.Add(1)
	js.e.wg.Add(1)
	go func() {
		defer js.e.wg.Done()
		defer j.runs.Done()
		rctx, cancel := context.WithTimeout(ctx, j.every)
		unhook := context.AfterFunc(j.stopped, cancel)
		err := j.fn(rctx)
		unhook()
		cancel()
		if err != nil && ctx.Err() == nil && j.stopped.Err() == nil {
			js.e.d.Logger.Warn("job failed", "job", j.name, "err", err)
		}
		js.mu.Lock()
		j.running = false
		js.mu.Unlock()
	}()
}
