package daemon_test

import (
	"path/filepath"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/schedule"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
)

// scheduleConfig runs the bundled schedule package with one job every
// second in scope "clock", whose runs its route makes Work of.
const scheduleConfig = `{"scopes": [{"id": "clock",
  "entries": [{"name": "sched", "type": "schedule", "config": {"jobs": [{"name": "tick", "cron": "@every 1s"}]}}],
  "routes": [{"handler": "schedule"}]}]}`

// scheduled is what the store holds of the schedule package's runs.
type scheduled struct {
	fired []pebblekv.Event
	works []pebblekv.Work
	timer pebblekv.Timer
	armed bool
}

// readSchedule stops the daemon (which holds the store), reads the runs,
// and starts it again.
func readSchedule(t *testing.T, e *daemontest.Env) scheduled {
	t.Helper()
	e.Stop()
	defer e.Start()
	db, err := pebblekv.Open(filepath.Join(e.State, "store"), &pebblekv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s scheduled
	err = db.View(func(r *pebblekv.Reader) error {
		evs, err := r.ScopeEvents([]string{"clock"}, 0, pebblekv.MaxEvents)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type == schedule.Fired {
				s.fired = append(s.fired, ev)
			}
		}
		if s.works, _, err = r.Works(pebblekv.WorkQuery{Scope: "clock"}); err != nil {
			return err
		}
		s.timer, s.armed, err = r.Timer(pebblekv.TimerID(schedule.Name, schedule.TimerID("clock", "sched", "tick")))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestServeFiresAScheduleJobIntoTimedWork: on the real binary, a schedule
// job's timer fires schedule.fired Events from the host's timer source,
// each accepted once (one per occurrence, across the restarts the reads
// make), and the schedule route makes one timed schedule.run Work of each,
// titled by the job; the timer stays armed for the next run.
func TestServeFiresAScheduleJobIntoTimedWork(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(scheduleConfig)
	e.Start()
	var s scheduled
	e.Eventually("two runs of the job as Work", func() bool {
		s = readSchedule(t, e)
		return len(s.works) >= 2
	})
	seen := map[string]bool{}
	for _, ev := range s.fired {
		if ev.Source != "schedule/timer" || seen[ev.DeliveryID] || !strings.HasPrefix(ev.DeliveryID, "schedule/clock/sched/tick@") {
			t.Fatalf("fired %+v: want one Event per occurrence from schedule/timer", ev)
		}
		seen[ev.DeliveryID] = true
		var d schedule.FiredData
		if err := json.Unmarshal(ev.Payload.Data, &d); err != nil || d.Job != "tick" || !d.ScheduledAt.Equal(ev.Time) {
			t.Fatalf("fired payload %s at %s: want job tick scheduled at the Event's time", ev.Payload.Data, ev.Time)
		}
	}
	keys := map[string]bool{}
	for _, w := range s.works {
		if w.Kind != schedule.Run || w.Display == nil || w.Display.Title != "tick" || len(w.Keys) != 1 || keys[w.Keys[0]] {
			t.Fatalf("work %+v: want one schedule.run per run, titled tick", w)
		}
		keys[w.Keys[0]] = true
	}
	if len(s.works) > len(s.fired) {
		t.Fatalf("%d Work from %d firings", len(s.works), len(s.fired))
	}
	if !s.armed || s.timer.Fired < 2 || s.timer.Recurrence == nil {
		t.Fatalf("the job's timer %+v (armed %v): want it rearmed after each run", s.timer, s.armed)
	}
}
