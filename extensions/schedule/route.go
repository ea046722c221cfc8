package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// RunKey is the correlation key of one job run: one Work per occurrence.
func RunKey(entry, job string, at time.Time) string {
	return "schedule:" + entry + "/" + job + "/" + at.UTC().Format(time.RFC3339)
}

// routeMatch matches a schedule.fired Event: a timed Work of kind
// schedule.run, keyed by the run, titled by the job's name. It reads
// nothing but the Event, so it is free of side effects.
func routeMatch(_ context.Context, _ *sdk.Request, p sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
	if p.Event.Type != Fired {
		return sdk.RouteMatchResult{Reason: "schedule matches only " + Fired + " Events"}, nil
	}
	var d FiredData
	if err := json.Unmarshal(p.Event.Payload.Data, &d); err != nil || d.Job == "" || d.ScheduledAt.IsZero() {
		return sdk.RouteMatchResult{Reason: "the " + Fired + " Event does not name its job and occurrence"}, nil
	}
	return sdk.RouteMatchResult{
		Match:   true,
		Reason:  fmt.Sprintf("job %s of entry %s, run due at %s", d.Job, d.Entry, d.ScheduledAt.UTC().Format(time.RFC3339)),
		Kind:    Run,
		Keys:    []string{RunKey(d.Entry, d.Job, d.ScheduledAt)},
		Display: &sdk.Display{Title: d.Job, Ref: d.ScheduledAt.UTC().Format("15:04:05")},
	}, nil
}

// samples offers a firing of a job named nightly due now, as the host's
// clock says, so a trace shows what a run would become.
func samples(_ context.Context, _ *sdk.Request, p sdk.RouteSamplesParams) ([]sdk.RouteSample, error) {
	at := p.Now.UTC().Truncate(time.Second)
	data, err := json.Marshal(FiredData{Entry: "sample", Job: "nightly", ScheduledAt: at})
	if err != nil {
		return nil, err
	}
	return []sdk.RouteSample{{
		ID: "fired", Title: "job nightly of entry sample, due now",
		Event: sdk.SampleEvent{Type: Fired, Payload: sdk.Payload{Schema: FiredSchema, Data: data}},
	}}, nil
}

// eventsPage is state.events' params and answer, as this package reads
// them.
type eventsParams struct {
	After uint64 `json:"after,omitzero"`
	Limit int    `json:"limit,omitzero"`
}

type eventsPage struct {
	Events []sdk.Event `json:"events"`
	Next   uint64      `json:"next,omitzero"`
	More   bool        `json:"more,omitzero"`
}

// countRuns counts the firings accepted since the last pass into each
// job's JobRuns, and moves the cursor in the same batch, so a pass that
// fails or races another counts nothing twice.
func countRuns(ctx context.Context, r *sdk.Request) error {
	for {
		cur, err := r.Host.Get(ctx, Runs, cursorKey)
		if err != nil {
			return err
		}
		var after uint64
		if cur.Found {
			_ = json.Unmarshal(cur.Value, &after)
		}
		var page eventsPage
		if err := r.Host.Call(ctx, "state.events", eventsParams{After: after, Limit: 500}, &page); err != nil {
			return fmt.Errorf("reading the log after %d: %w", after, err)
		}
		if len(page.Events) == 0 {
			return nil
		}
		if err := commitRuns(ctx, r.Host, cur, page); err != nil {
			return err
		}
		if !page.More {
			return nil
		}
	}
}

// commitRuns adds one page's firings to the counts and moves the cursor
// past the page, if the cursor is still where the page was read from.
func commitRuns(ctx context.Context, h *sdk.Host, cur sdk.Value, page eventsPage) error {
	b := sdk.NewBatch()
	if cur.Found {
		b.Check(Runs, cursorKey, cur.Version)
	} else {
		b.CheckAbsent(Runs, cursorKey)
	}
	runs := map[string]JobRuns{}
	for _, ev := range page.Events {
		var d FiredData
		if ev.Type != Fired || ev.Source != Name+"/timer" || json.Unmarshal(ev.Payload.Data, &d) != nil {
			continue
		}
		key := ev.Scope + "/" + d.Entry + "/" + d.Job
		jr, seen := runs[key]
		if !seen {
			v, err := h.Get(ctx, Runs, key)
			if err != nil {
				return err
			}
			_ = json.Unmarshal(v.Value, &jr)
			if v.Found {
				b.Check(Runs, key, v.Version)
			} else {
				b.CheckAbsent(Runs, key)
			}
		}
		jr.Count++
		if d.ScheduledAt.After(jr.LastFired) {
			jr.LastFired = d.ScheduledAt.UTC()
		}
		runs[key] = jr
	}
	for key, jr := range runs {
		raw, _ := json.Marshal(jr)
		b.Put(Runs, key, raw)
	}
	last := page.Events[len(page.Events)-1].Sequence
	raw, _ := json.Marshal(last)
	b.Put(Runs, cursorKey, raw)
	_, err := h.Commit(ctx, b)
	if err != nil && strings.Contains(err.Error(), "conflict") {
		return fmt.Errorf("another pass counted meanwhile; the next pass goes on: %w", err)
	}
	return err
}
