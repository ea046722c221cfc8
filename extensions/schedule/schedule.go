// Package schedule is the bundled cron package: an entry of type schedule
// lists jobs, each a 5-field cron expression or @every <duration>, and each
// job fires a schedule.fired Event into the entry's scope at every
// occurrence, through a durable host timer rearmed by the recurrence kind
// schedule.cron. Its route handler schedule turns each firing into timed
// Work of kind schedule.run, one per job run; its task counts each job's
// runs in its KV, and it renders each firing (job, entry, due time) for
// prompts and operators. It is built only on the SDK and served by the
// open-conduit binary (open-conduit extension-run schedule).
package schedule

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// Names the package declares.
const (
	Name = "schedule"
	// Fired is the family of a job's firing, FiredSchema its payload.
	Fired       = "schedule.fired"
	FiredSchema = "schedule.fired.v1"
	// Cron is the recurrence kind of a job's timer.
	Cron = "schedule.cron"
	// Run is the Work kind of one job run (timed).
	Run = "schedule.run"
	// Handler is the route handler that turns firings into Work.
	Handler = "schedule"
	// RunsTask counts job runs into the Runs namespace.
	RunsTask = "schedule-runs"
)

// KV namespaces.
const (
	// Armed holds, by timer id, the schedule each armed job's timer runs.
	Armed = "schedule.armed"
	// Runs holds, by "<scope>/<entry>/<job>", a JobRuns; cursorKey holds
	// how far in the log the task has counted.
	Runs      = "schedule.runs"
	cursorKey = "~cursor"
)

// RunsEvery is how often the runs task counts new firings.
const RunsEvery = 5 * time.Second

// Config is a schedule entry's config.
type Config struct {
	Jobs []Job `json:"jobs,omitempty" doc:"The jobs: each fires a schedule.fired Event at every occurrence of its schedule."`
}

// Job is one scheduled job.
type Job struct {
	Name string `json:"name" doc:"The job's name: lower-case letters, digits, '-' or '_'; unique in its entry."`
	Cron string `json:"cron" doc:"A 5-field cron expression (minute hour day-of-month month day-of-week, UTC) or @every <duration> (at least 1s)."`
}

// FiredData is a firing's payload: which job, and the occurrence it is.
type FiredData struct {
	Entry       string    `json:"entry"`
	Job         string    `json:"job"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// cronRule is a job timer's recurrence rule.
type cronRule struct {
	Cron string `json:"cron"`
}

// JobRuns is what the KV shows of one job's runs.
type JobRuns struct {
	Count     int       `json:"count"`
	LastFired time.Time `json:"last_fired"`
}

// Extension builds the schedule package.
func Extension() *sdk.Extension {
	x := sdk.New(Name, sdk.Version("0.1.0"), sdk.HostRun(),
		sdk.Title("Schedule"), sdk.Summary("fires cron and @every jobs as Events, each run a timed Work"), sdk.Certification(Certification)).
		EntryType(Name, sdk.EntryConfig[Config]()).
		Validate(validate).
		Configure(configure).
		Family(Fired, sdk.Loss("runs due while the daemon was down fire once when it is back, not once each")).
		Schema(Fired, 1).
		Recurrence(Cron, next).
		Task(RunsTask, RunsEvery, countRuns).
		RouteHandler(Handler, routeMatch, sdk.Samples(samples)).
		WorkKind(sdk.WorkKind{Kind: Run, Timed: true}).
		Render(render)
	return x
}

// jobName is what a job's name may be: it is part of a timer id and a key.
var jobName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// validate checks an entry's jobs (names, schedules) and that a route on
// the handler has no config.
func validate(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
	switch p.Kind {
	case sdk.ValidateExtension:
		c, err := sdk.DecodeEntry[Config](sdk.Entry{Scope: p.Scope, Type: p.Type, Name: p.Name, Config: p.Config})
		if err != nil {
			return sdk.ValidateResult{}, err
		}
		return sdk.ValidateResult{}, checkJobs(p.Name, c.Jobs)
	case sdk.ValidateRoute:
		if len(p.Config) > 0 && string(p.Config) != "{}" && string(p.Config) != "null" {
			return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid, "a route on the schedule handler takes no config: remove it")
		}
	}
	return sdk.ValidateResult{}, nil
}

// checkJobs refuses a job with a bad or repeated name or a bad schedule,
// naming the job.
func checkJobs(entry string, jobs []Job) error {
	seen := map[string]bool{}
	for i, j := range jobs {
		switch {
		case !jobName.MatchString(j.Name):
			return sdk.Errorf(sdk.ErrInvalid, "schedule entry %q: job %d's name %q: use lower-case letters, digits, '-' or '_' (at most 64)", entry, i, j.Name)
		case seen[j.Name]:
			return sdk.Errorf(sdk.ErrInvalid, "schedule entry %q: job %q is named twice: give each job its own name", entry, j.Name)
		}
		seen[j.Name] = true
		if _, err := Parse(j.Cron); err != nil {
			return sdk.Errorf(sdk.ErrInvalid, "schedule entry %q: job %q: %v", entry, j.Name, err)
		}
	}
	return nil
}

// TimerID is the id of a job's timer.
func TimerID(scope, entry, job string) string { return scope + "/" + entry + "/" + job }

// configure arms a timer for each job of each enabled entry whose schedule
// is new or changed, and cancels the timers of jobs that went away. The
// timers of entries in disabled scopes are kept armed, as they were, and
// the empty generation (id 0) changes nothing.
func configure(ctx context.Context, r *sdk.Request, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
	if p.Generation.ID == 0 {
		// The empty generation a package is started with, before the
		// daemon's configuration is live: it removes no job.
		return sdk.ConfigureResult{}, nil
	}
	armed, err := r.Host.List(ctx, Armed, "")
	if errors.Is(err, sdk.ErrUnsupported) {
		// A host with no store (offline validation) keeps no timers.
		return sdk.ConfigureResult{}, nil
	}
	if err != nil {
		return sdk.ConfigureResult{}, fmt.Errorf("reading the armed jobs: %w", err)
	}
	keep := map[string]bool{}
	for _, e := range p.Disabled {
		c, _ := sdk.DecodeEntry[Config](e)
		for _, j := range c.Jobs {
			keep[TimerID(e.Scope, e.Name, j.Name)] = true
		}
	}
	was := map[string]string{}
	for _, it := range armed {
		was[it.Key] = string(it.Value)
	}
	now := time.Now().UTC()
	for _, e := range p.Entries {
		c, err := sdk.DecodeEntry[Config](e)
		if err != nil {
			return sdk.ConfigureResult{}, err
		}
		if err := checkJobs(e.Name, c.Jobs); err != nil {
			return sdk.ConfigureResult{}, err
		}
		for _, j := range c.Jobs {
			id := TimerID(e.Scope, e.Name, j.Name)
			keep[id] = true
			if was[id] == j.Cron {
				continue
			}
			if err := arm(ctx, r.Host, e, j, now); err != nil {
				return sdk.ConfigureResult{}, err
			}
		}
	}
	for id := range was {
		if keep[id] {
			continue
		}
		if _, err := r.Host.CancelTimer(ctx, id); err != nil {
			return sdk.ConfigureResult{}, fmt.Errorf("cancelling the timer of %s: %w", id, err)
		}
		if _, err := r.Host.Commit(ctx, sdk.NewBatch().Delete(Armed, id)); err != nil {
			return sdk.ConfigureResult{}, err
		}
	}
	return sdk.ConfigureResult{}, nil
}

// arm arms a job's timer at its next occurrence after now and records its
// schedule as armed.
func arm(ctx context.Context, h *sdk.Host, e sdk.Entry, j Job, now time.Time) error {
	spec, _ := Parse(j.Cron)
	due, ok := spec.Next(now)
	if !ok {
		return sdk.Errorf(sdk.ErrInvalid, "schedule entry %q: job %q never fires", e.Name, j.Name)
	}
	data, _ := json.Marshal(FiredData{Entry: e.Name, Job: j.Name, ScheduledAt: due})
	rule, _ := json.Marshal(cronRule{Cron: j.Cron})
	id := TimerID(e.Scope, e.Name, j.Name)
	err := h.ArmTimer(ctx, sdk.Timer{
		ID: id, Scope: e.Scope, Due: due, Family: Fired,
		Payload:    sdk.Payload{Schema: FiredSchema, Data: data},
		Recurrence: &sdk.RecurrenceRule{Kind: Cron, Rule: rule},
	})
	if err != nil {
		return fmt.Errorf("arming the timer of %s: %w", id, err)
	}
	_, err = h.Commit(ctx, sdk.NewBatch().Put(Armed, id, []byte(j.Cron)))
	return err
}

// next is recurrence.next for schedule.cron: the job's next occurrence after
// the one that fired, and the payload naming it.
func next(_ context.Context, _ *sdk.Request, p sdk.RecurrenceNextParams) (sdk.RecurrenceNextResult, error) {
	var rule cronRule
	if err := json.Unmarshal(p.Rule, &rule); err != nil {
		return sdk.RecurrenceNextResult{}, sdk.Errorf(sdk.ErrInvalid, "timer %s: the rule is not a schedule.cron rule", p.Timer)
	}
	spec, err := Parse(rule.Cron)
	if err != nil {
		return sdk.RecurrenceNextResult{}, sdk.Errorf(sdk.ErrInvalid, "timer %s: %v", p.Timer, err)
	}
	at, ok := spec.Next(p.After)
	if !ok {
		return sdk.RecurrenceNextResult{Done: true}, nil
	}
	var d FiredData
	if err := json.Unmarshal(p.Payload.Data, &d); err != nil {
		return sdk.RecurrenceNextResult{}, sdk.Errorf(sdk.ErrInvalid, "timer %s: its payload is not a schedule.fired payload", p.Timer)
	}
	d.ScheduledAt = at
	data, _ := json.Marshal(d)
	return sdk.RecurrenceNextResult{Next: at, Payload: &sdk.Payload{Schema: FiredSchema, Data: data}}, nil
}
