package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// The scheduler's benchmark runs Work on a minimal executor package served
// in this process over real pipes by the SDK's harness, as the webhook
// benchmarks serve the webhook package, against the engine on a real
// Pebble store whose every commit is synced, on the engine's real clock.

// instantName names the instant package and its one executor.
const instantName = "instant"

// attemptRound is how many pending Work each round starts.
const attemptRound = 200

// instant is an executor whose executor.run answers at once and whose
// executor.wait settles completed at once. It counts the runs, and says
// when the count reaches a target.
type instant struct {
	runs    atomic.Int64
	target  atomic.Int64
	reached chan struct{}
}

func newInstant() *instant { return &instant{reached: make(chan struct{}, 1)} }

// expect makes reached fire when the runs reach n in all.
func (x *instant) expect(n int64) {
	x.target.Store(n)
	if x.runs.Load() >= n {
		x.signal()
	}
}

func (x *instant) signal() {
	select {
	case x.reached <- struct{}{}:
	default:
	}
}

func (x *instant) extension() *sdk.Extension {
	return sdk.New(instantName, sdk.Version("0.1.0")).Executor(instantName, sdk.ExecutorFuncs{
		Run: func(context.Context, *sdk.Request, sdk.ExecutorRunParams) (sdk.ExecutorRunResult, error) {
			if x.runs.Add(1) == x.target.Load() {
				x.signal()
			}
			return sdk.ExecutorRunResult{}, nil
		},
		Wait: func(context.Context, *sdk.Request, sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
			return sdk.ExecutorWaitResult{State: sdk.OutcomeCompleted}, nil
		},
		Recover: func(context.Context, *sdk.Request, sdk.ExecutorRecoverParams) error { return nil },
	})
}

// executorPackages is harnessPackages declaring its package's executors.
type executorPackages struct{ harnessPackages }

func (p executorPackages) ExecutorOwner(executor string) (string, protocol.Executor) {
	for _, x := range p.m.Provides.Executors {
		if x.Name == executor {
			return p.m.Name, x
		}
	}
	return "", protocol.Executor{}
}

// attemptRig is the engine running scope acme's Work under binding b,
// whose executor is the instant package's.
type attemptRig struct {
	db *pebblekv.DB
	e  *Engine
	x  *instant
}

func newAttemptRig(b *testing.B, concurrency int) *attemptRig {
	b.Helper()
	x := newInstant()
	ext := x.extension()
	h, err := sdktest.Start(ext)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	db, err := pebblekv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	cfg := &config.Config{Scopes: []config.Scope{{ID: "acme",
		Bindings: []config.Binding{{Name: "b", Executor: instantName, Toolbelt: "none"}}}}}
	cfg.Settings.Concurrency = &concurrency
	gen := &config.Generation{ID: 1, Config: cfg}
	r := &attemptRig{db: db, x: x}
	r.e = New(Deps{DB: db, Packages: executorPackages{harnessPackages{h: h, m: ext.Manifest}},
		Generation: func() *config.Generation { return gen }})
	r.e.Start(context.Background())
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.e.Stop(ctx)
	})
	return r
}

// addPending commits n pending Work of binding b in one batch.
func (r *attemptRig) addPending(n int) error {
	now := time.Now().UTC()
	return r.db.Update(func(tx *pebblekv.Tx) error {
		for range n {
			if err := tx.PutWork(pebblekv.Work{ID: pebblekv.NewWorkID(), Scope: "acme", Kind: "manual",
				State: pebblekv.WorkPending, Binding: "b", Created: now, Updated: now}); err != nil {
				return err
			}
		}
		return nil
	})
}

// openWork reports whether any Work is still pending or running.
func (r *attemptRig) openWork() (bool, error) {
	var open bool
	err := r.db.View(func(rd *pebblekv.Reader) error {
		for _, st := range []string{pebblekv.WorkPending, pebblekv.WorkRunning} {
			ws, _, err := rd.Works(pebblekv.WorkQuery{State: st, Limit: 1})
			if err != nil {
				return err
			}
			open = open || len(ws) > 0
		}
		return nil
	})
	return open, err
}

// waitSettled waits until no Work is pending or running.
func (r *attemptRig) waitSettled(b *testing.B) {
	b.Helper()
	waitEngine(b, r.e, "the started Work all settled", func() (bool, error) {
		open, err := r.openWork()
		return !open, err
	})
}

// completed counts the completed Work.
func (r *attemptRig) completed() (int, error) {
	n := 0
	err := r.db.View(func(rd *pebblekv.Reader) error {
		for after := ""; ; {
			ws, more, err := rd.Works(pebblekv.WorkQuery{State: pebblekv.WorkCompleted, After: after})
			if err != nil {
				return err
			}
			n += len(ws)
			if !more || len(ws) == 0 {
				return nil
			}
			after = ws[len(ws)-1].ID
		}
	})
	return n, err
}

// BenchmarkAttemptsStarted commits rounds of 200 pending Work (one Work
// per iteration) and has the real scheduler start an attempt of each on
// the instant executor (executor.run and executor.wait answered at once
// over the pipes) and settle it completed. started/s is the median
// round's Work over the time from its commit to the last executor.run
// reaching the package (each start is one synced commit of the execution
// and the Work running); completed/s to the last Work completed (one
// synced commit each). concurrency=4 is the default bound on running
// attempts; concurrency=256 is never the limit.
func BenchmarkAttemptsStarted(b *testing.B) {
	for _, limit := range []int{config.DefaultConcurrency, 256} {
		b.Run(fmt.Sprintf("concurrency=%d", limit), func(b *testing.B) {
			r := newAttemptRig(b, limit)
			var started, completed []float64
			var total int64
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(attemptRound, b.N-done)
				done += n
				b.StopTimer()
				total += int64(n)
				r.x.expect(total)
				if err := r.addPending(n); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				r.e.WorkChanged()
				select {
				case <-r.x.reached:
				case <-time.After(waitFor):
					b.Fatalf("%d of %d attempts started within %s", r.x.runs.Load(), total, waitFor)
				}
				started = append(started, float64(n)/time.Since(t0).Seconds())
				r.waitSettled(b)
				completed = append(completed, float64(n)/time.Since(t0).Seconds())
			}
			b.StopTimer()
			if got, err := r.completed(); err != nil || int64(got) != total || r.x.runs.Load() != total {
				b.Fatalf("%d Work completed (%v) and %d attempts run, want %d of each", got, err, r.x.runs.Load(), total)
			}
			b.ReportMetric(median(started), "started/s")
			b.ReportMetric(median(completed), "completed/s")
		})
	}
}
