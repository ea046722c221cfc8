package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// taskState is what the operator sees of one declared task.
type taskState struct {
	mu      sync.Mutex
	runs    int
	lastRun time.Time
	lastErr string
}

func (t *taskState) record(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs++
	t.lastRun = time.Now()
	t.lastErr = ""
	if err != nil {
		t.lastErr = err.Error()
	}
}

// startTasks runs every declared task of every package at its interval.
// A run is bounded by its interval, so a hung pass never piles up.
func (d *Daemon) startTasks(ctx context.Context) {
	for _, x := range d.extensions() {
		if x.session == nil {
			continue
		}
		x.tasks = map[string]*taskState{}
		for _, t := range x.pkg.Manifest.Provides.Tasks {
			st := &taskState{}
			x.tasks[t.Name] = st
			every := time.Duration(t.IntervalSeconds) * time.Second
			d.tasks.Add(1)
			go func() {
				defer d.tasks.Done()
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					rctx, cancel := context.WithTimeout(ctx, every)
					err := x.session.Call(rctx, protocol.MethodTaskRun, protocol.TaskRunParams{Task: t.Name}, nil)
					cancel()
					if err != nil && ctx.Err() == nil {
						d.logger.Warn("task failed", "extension", x.pkg.Name, "task", t.Name, "err", err)
					}
					st.record(err)
				}
			}()
		}
	}
}
