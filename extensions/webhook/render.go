package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/sdk"
)

// MaxRenderedBody bounds how much of a delivery's indented body a
// rendering shows; the rest is counted, not shown.
const MaxRenderedBody = 16 << 10

// render renders a webhook.received Event: its title (or key), key,
// delivery and source, then the body's JSON indented, bounded by
// MaxRenderedBody. A payload it cannot read is an error, so the host
// renders the Event generically.
func render(_ context.Context, _ *sdk.Request, p sdk.EventRenderParams) (string, error) {
	var it item
	if err := json.Unmarshal(p.Event.Payload.Data, &it); err != nil || it.Key == "" {
		return "", sdk.Errorf(sdk.ErrInvalid, "Event %s carries no webhook delivery with a key", p.Event.ID)
	}
	var b strings.Builder
	title := oneLine(it.Title)
	if title == "" {
		title = "webhook " + oneLine(it.Key)
	}
	fmt.Fprintf(&b, "**%s**\n\n", title)
	fmt.Fprintf(&b, "- key: %s\n", oneLine(it.Key))
	fmt.Fprintf(&b, "- delivery: %s\n", oneLine(p.Event.DeliveryID))
	fmt.Fprintf(&b, "- source: %s\n", p.Event.Source)
	fmt.Fprintf(&b, "- received: %s\n\n", p.Event.Time.UTC().Format(time.RFC3339))
	b.WriteString("```json\n")
	b.WriteString(boundedBody(it.Body))
	b.WriteString("\n```\n")
	return b.String(), nil
}

// boundedBody is body indented, cut at a rune within MaxRenderedBody with
// the count of what was left out.
func boundedBody(body jsontext.Value) string {
	v := body.Clone()
	if len(v) == 0 {
		return "null"
	}
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		v = body
	}
	s := string(v)
	if len(s) <= MaxRenderedBody {
		return s
	}
	cut := MaxRenderedBody
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n… (%d more bytes not shown)", s[:cut], len(s)-cut)
}
