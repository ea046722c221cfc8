package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// taskRunner runs one package's declared tasks at their intervals, from
// when the configuration is live until the package is stopped or replaced.
type taskRunner struct {
	d       *Daemon
	name    string
	session *session.Session
	tasks   []protocol.Task

	mu      sync.Mutex
	state   map[string]*taskState
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// taskState is what the operator sees of one declared task.
type taskState struct {
	runs    int
	lastRun time.Time
	lastErr string
}

func newTaskRunner(d *Daemon, name string, s *session.Session, tasks []protocol.Task) *taskRunner {
	r := &taskRunner{d: d, name: name, session: s, tasks: tasks, state: map[string]*taskState{}}
	for _, t := range tasks {
		r.state[t.Name] = &taskState{}
	}
	return r
}

// startTasks starts every package's tasks once the configuration is live.
func (d *Daemon) startTasks() {
	for _, x := range d.pkgs.list() {
		if t := d.pkgs.snapshot(x).tasks; t != nil {
			t.start(d.ctx)
		}
	}
}

// start runs each task at its interval until stop. A run is bounded by
// its interval, so a hung pass never piles up. Starting twice is a no-op.
func (r *taskRunner) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	for _, t := range r.tasks {
		every := time.Duration(t.IntervalSeconds) * time.Second
		r.running.Add(1)
		go func() {
			defer r.running.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				r.run(ctx, t.Name, every)
			}
		}()
	}
}

func (r *taskRunner) run(ctx context.Context, task string, every time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, every)
	_, err := session.Invoke(rctx, r.session, protocol.TaskRun, protocol.TaskRunParams{Task: task})
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		r.d.logger.Warn("task failed", "extension", r.name, "task", task, "err", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state[task]
	st.runs++
	st.lastRun = time.Now()
	st.lastErr = ""
	if err != nil {
		st.lastErr = err.Error()
	}
}

// stop ends the tasks and waits for a run in progress.
func (r *taskRunner) stop() {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.running.Wait()
}

// views are the tasks as the operator sees them.
func (r *taskRunner) views() []client.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]client.Task, 0, len(r.tasks))
	for _, t := range r.tasks {
		st := r.state[t.Name]
		out = append(out, client.Task{Name: t.Name, Every: t.IntervalSeconds, Runs: st.runs, LastRun: st.lastRun, LastErr: st.lastErr})
	}
	return out
}
