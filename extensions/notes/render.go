package notes

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// render renders the package's Events for a prompt or an operator's view:
// a note as its thread, id and text quoted; a digest as its entry and due
// time. A payload it cannot read is an error, so the host renders the Event
// generically.
func render(_ context.Context, _ *sdk.Request, p sdk.EventRenderParams) (string, error) {
	switch p.Event.Type {
	case Added:
		var n Note
		if err := json.Unmarshal(p.Event.Payload.Data, &n); err != nil || n.ID == "" || n.Thread == "" {
			return "", sdk.Errorf(sdk.ErrInvalid, "Event %s carries no note with an id and a thread", p.Event.ID)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "**Note %s on thread %s**\n\n", n.ID, n.Thread)
		for line := range strings.SplitSeq(n.Text, "\n") {
			fmt.Fprintf(&b, "> %s\n", line)
		}
		return b.String(), nil
	case Digest:
		var d DigestData
		if err := json.Unmarshal(p.Event.Payload.Data, &d); err != nil || d.Entry == "" {
			return "", sdk.Errorf(sdk.ErrInvalid, "Event %s carries no digest naming its entry", p.Event.ID)
		}
		return fmt.Sprintf("**Digest of notes entry %s**, due %s\n", d.Entry, d.ScheduledAt.UTC().Format(time.RFC3339)), nil
	}
	return "", sdk.Errorf(sdk.ErrUndeclared, "notes renders only %s and %s Events", Added, Digest)
}
