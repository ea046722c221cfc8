package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// render renders a schedule.fired Event: the job, its entry and scope, the
// occurrence it was due at and when it fired. A payload that names no job
// and occurrence is an error, so the host renders the Event generically.
func render(_ context.Context, _ *sdk.Request, p sdk.EventRenderParams) (string, error) {
	var d FiredData
	if err := json.Unmarshal(p.Event.Payload.Data, &d); err != nil || d.Job == "" || d.ScheduledAt.IsZero() {
		return "", sdk.Errorf(sdk.ErrInvalid, "Event %s does not name its job and occurrence", p.Event.ID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Scheduled job %s**\n\n", d.Job)
	fmt.Fprintf(&b, "- entry: %s in scope %s\n", d.Entry, p.Event.Scope)
	fmt.Fprintf(&b, "- due: %s\n", d.ScheduledAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- fired: %s\n", p.Event.Time.UTC().Format(time.RFC3339))
	if p.Work != nil {
		fmt.Fprintf(&b, "- run: Work %s (%s)\n", p.Work.ID, p.Work.State)
	}
	return b.String(), nil
}
