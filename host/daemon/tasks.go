package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// taskRunner runs one package's declared tasks at their intervals on the
// engine's scheduler and clock (the one that fires timers), from when the
// configuration is live until the package is stopped or replaced. A task
// of a package that is not running (stopped, restarting) is answered
// unavailable; that run is counted with its error, so the operator sees it.
type taskRunner struct {
	d       *Daemon
	name    string
	session *session.Session
	tasks   []protocol.Task

	mu    sync.Mutex
	state map[string]*taskState
	stops []func()
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
			t.start()
		}
	}
}

// start asks the engine to run each task every interval (a run bounded by
// it, so a hung pass never piles up) until stop. Starting twice is a
// no-op.
func (r *taskRunner) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stops != nil {
		return
	}
	r.stops = []func(){}
	for _, t := range r.tasks {
		every := time.Duration(t.IntervalSeconds) * time.Second
		stop := r.d.engine.Every(r.name+"/"+t.Name, every, func(ctx context.Context) error {
			return r.run(ctx, t.Name)
		})
		r.stops = append(r.stops, stop)
	}
}

// run runs one pass of task and records it; a pass cut off because the
// task was stopped is not recorded.
func (r *taskRunner) run(ctx context.Context, task string) error {
	_, err := session.Invoke(ctx, r.session, protocol.TaskRun, protocol.TaskRunParams{Task: task})
	if err != nil && ctx.Err() == context.Canceled {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state[task]
	st.runs++
	st.lastRun = r.d.engine.Now()
	st.lastErr = ""
	if err != nil {
		st.lastErr = err.Error()
	}
	return err
}

// stop ends the tasks and waits for a run in progress.
func (r *taskRunner) stop() {
	r.mu.Lock()
	stops := r.stops
	r.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
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
