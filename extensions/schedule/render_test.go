package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/schedule"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// TestRenderSaysWhichJobFiredAndWhenItWasDue: a firing renders with its
// job, entry, scope and due time; a firing naming no job, and an Event of a
// family schedule does not own, are refused so the host renders them
// generically.
func TestRenderSaysWhichJobFiredAndWhenItWasDue(t *testing.T) {
	if !schedule.Extension().Manifest.Provides.Render {
		t.Fatal("schedule does not declare render")
	}
	h := sdktest.New(t, schedule.Extension())
	due := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	data, _ := json.Marshal(schedule.FiredData{Entry: "cron", Job: "nightly", ScheduledAt: due})
	ev := sdk.Event{ID: "e1", Scope: "demo", Type: schedule.Fired, Source: "schedule/timer", Time: due.Add(2 * time.Second),
		Payload: sdk.Payload{Schema: schedule.FiredSchema, Data: data}}
	text, err := h.Render(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Scheduled job nightly", "entry: cron in scope demo", "due: 2026-11-30T03:00:00Z", "fired: 2026-11-30T03:00:02Z"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, text)
		}
	}
	for _, tc := range []struct {
		name string
		ev   sdk.Event
		want error
	}{
		{"a firing naming no job", sdk.Event{ID: "e2", Type: schedule.Fired, Payload: sdk.Payload{Data: []byte(`{"entry":"cron"}`)}}, sdk.ErrInvalid},
		{"another package's family", sdk.Event{ID: "e3", Type: "manual.request", Payload: sdk.Payload{Data: data}}, protocol.ErrUndeclared},
	} {
		if _, err := h.Render(context.Background(), tc.ev); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
