package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
)

// jobRig is an engine on a real store and a hand-moved clock, whose jobs
// record each run they make.
type jobRig struct {
	t     *testing.T
	e     *Engine
	clock *schedClock

	mu   sync.Mutex
	runs []string
	ran  chan string
}

func newJobRig(t *testing.T) *jobRig {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &jobRig{t: t, clock: newSchedClock(t0), ran: make(chan string, 64)}
	r.e = New(Deps{DB: db, Packages: newFakePackages(), Clock: r.clock})
	r.e.Start(context.Background())
	t.Cleanup(func() {
		if err := r.e.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

// every adds a job that records its runs.
func (r *jobRig) every(name string, d time.Duration) (stop func()) {
	return r.e.Every(name, d, func(context.Context) error {
		r.mu.Lock()
		r.runs = append(r.runs, name)
		r.mu.Unlock()
		r.ran <- name
		return nil
	})
}

// settle waits until the scheduler has gone to sleep since the call.
func (r *jobRig) settle() {
	r.t.Helper()
	r.clock.settle(r.t, r.e)
}

// advance moves the clock by d and waits for exactly the runs want (in
// any order), then for the scheduler to sleep again.
func (r *jobRig) advance(d time.Duration, want ...string) {
	r.t.Helper()
	r.settle()
	r.clock.advance(d)
	var got []string
	for range want {
		name, ok := nudgedRecv(r.e, r.ran)
		if !ok {
			r.t.Fatalf("after %v: waited 30s for runs %v, got %v", d, want, got)
		}
		got = append(got, name)
	}
	r.finished(want...)
	r.settle()
	select {
	case name := <-r.ran:
		r.t.Fatalf("after %v: %s ran, want only %v", d, name, want)
	default:
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		r.t.Fatalf("after %v: runs %v, want %v", d, got, want)
	}
}

// TestEveryRunsAJobAtEachIntervalOfTheEnginesClock: nothing runs before
// the interval has passed on the engine's clock; each interval runs the
// job once; a clock that jumps several intervals runs it once and resumes
// its cadence from there.
func TestEveryRunsAJobAtEachIntervalOfTheEnginesClock(t *testing.T) {
	r := newJobRig(t)
	r.every("sync", 10*time.Second)
	r.advance(9 * time.Second)
	r.advance(time.Second, "sync")
	r.advance(10*time.Second, "sync")
	r.advance(35*time.Second, "sync")
	r.advance(9 * time.Second)
	r.advance(time.Second, "sync")
}

// TestEveryInterleavesJobsOfTwoPackages: two jobs with their own intervals
// each run at theirs on the one scheduler, and a job whose run hangs holds
// up neither the other job nor its own later occurrences beyond the hung
// one.
func TestEveryInterleavesJobsOfTwoPackages(t *testing.T) {
	r := newJobRig(t)
	r.every("alpha/sync", 10*time.Second)
	r.every("beta/sync", 15*time.Second)
	r.advance(10*time.Second, "alpha/sync")
	r.advance(5*time.Second, "beta/sync")
	r.advance(5*time.Second, "alpha/sync")
	r.advance(10*time.Second, "alpha/sync", "beta/sync")

	release := make(chan struct{})
	hung := make(chan struct{}, 4)
	r.e.Every("gamma/hang", 10*time.Second, func(ctx context.Context) error {
		hung <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	r.advance(10*time.Second, "alpha/sync")
	if _, ok := nudgedRecv(r.e, hung); !ok {
		t.Fatal("the hanging job did not start within 30s")
	}
	r.advance(5*time.Second, "beta/sync")
	r.advance(5*time.Second, "alpha/sync")
	select {
	case <-hung:
		t.Fatal("the hanging job started again while its first run still went on")
	default:
	}
	close(release)
}

// TestEveryStopEndsTheJobAndWaitsForItsRun: stop cancels a run in
// progress and returns once it ended; the stopped job never runs again,
// while another job keeps its cadence (the negative control).
func TestEveryStopEndsTheJobAndWaitsForItsRun(t *testing.T) {
	r := newJobRig(t)
	r.every("alpha/sync", 10*time.Second)
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	stop := r.e.Every("beta/slow", 10*time.Second, func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	})
	r.advance(10*time.Second, "alpha/sync")
	if _, ok := nudgedRecv(r.e, started); !ok {
		t.Fatal("the slow job did not start within 30s")
	}
	stop()
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Fatalf("the run in progress ended with %v, want context.Canceled", err)
		}
	default:
		t.Fatal("stop returned before the run in progress ended")
	}
	stop()
	r.advance(10*time.Second, "alpha/sync")
	r.advance(10*time.Second, "alpha/sync")
	select {
	case <-started:
		t.Fatal("the stopped job ran again")
	default:
	}
}

// TestEngineStopEndsJobRuns: the engine's Stop ends a run in progress and
// waits for it, and a job added before Start runs once the engine starts.
func TestEngineStopEndsJobRuns(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := newSchedClock(t0)
	e := New(Deps{DB: db, Packages: newFakePackages(), Clock: clock})
	started := make(chan struct{}, 1)
	var ended error
	e.Every("alpha/slow", 10*time.Second, func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		ended = ctx.Err()
		return nil
	})
	e.Start(context.Background())
	clock.advance(10 * time.Second)
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the job added before Start did not run within 60s")
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ended != context.Canceled {
		t.Fatalf("the run ended with %v after Stop, want context.Canceled", ended)
	}
}

// nudgedRecv receives from ch within 30 s, waking e's scheduler every 50
// ms meanwhile. The scheduler reads the test clock twice before it sleeps
// (the time to sleep until, then the sleep's start), so a clock the test
// moves between the two reads can leave it asleep past a job's due time;
// a real clock only makes it late by that gap. A spurious wake must never
// run a job early, so the nudges cannot make a wrong answer pass.
func nudgedRecv[T any](e *Engine, ch <-chan T) (T, bool) {
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case v := <-ch:
			return v, true
		case <-tick.C:
			e.TimersChanged()
		case <-deadline:
			var zero T
			return zero, false
		}
	}
}

// finished waits until the runs of the jobs named have returned: a job is
// sent its run's name before the run ends, and one still running at its
// next due time is skipped by design, so the next advance must not come
// before the goroutine has marked it done.
func (r *jobRig) finished(names ...string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		busy := ""
		r.e.jobs.mu.Lock()
		for j := range r.e.jobs.all {
			if j.running && slices.Contains(names, j.name) {
				busy = j.name
			}
		}
		r.e.jobs.mu.Unlock()
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the run of %s did not end within 30s", busy)
		}
		time.Sleep(time.Millisecond)
	}
}
