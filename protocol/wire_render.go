package protocol

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Limits of event.render.
const (
	// RenderDeadline bounds one event.render call: a package that has not
	// answered by then is rendered for generically.
	RenderDeadline = 5 * time.Second
	// RenderMaxText bounds a rendering's text in bytes. The host refuses a
	// longer answer whole (it never cuts a package's text, which could end
	// mid-sentence or mid-markup) and renders the Event generically.
	RenderMaxText = 64 << 10
	// RenderGenericPayloadMax bounds how much of the payload's indented
	// JSON a generic rendering shows; the rest is counted, not shown.
	RenderGenericPayloadMax = 16 << 10
)

// EventRenderParams asks the package that owns an Event's family to render
// it as text for a prompt or an operator's view. The host asks only a
// package that declares the Event's family and render, and only when the
// package can read the payload's schema (PayloadStatus.Readable).
type EventRenderParams struct {
	Event Event `json:"event"`
	// Work is the Work the Event is rendered for, when there is one.
	Work *WorkView `json:"work,omitempty"`
}

// EventRenderResult is the rendering: Markdown-ish plain text, at most
// RenderMaxText bytes.
type EventRenderResult struct {
	Text string `json:"text"`
}

// EventRender asks a family's owner to render one of its Events.
var EventRender = Desc[EventRenderParams, EventRenderResult]{Name: MethodEventRender}

// RenderGeneric is the rendering of an Event nobody renders for it: its
// type, source, time and scope, then its payload's JSON indented, bounded
// by RenderGenericPayloadMax.
func RenderGeneric(ev Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s from %s at %s", ev.Type, orDash(ev.Source), ev.Time.UTC().Format(time.RFC3339))
	if ev.Scope != "" {
		fmt.Fprintf(&b, " in scope %s", ev.Scope)
	}
	b.WriteString("\n")
	if ev.Payload.Schema != "" {
		fmt.Fprintf(&b, "payload (%s):\n", ev.Payload.Schema)
	} else {
		b.WriteString("payload:\n")
	}
	data := jsontext.Value(ev.Payload.Data).Clone()
	if len(data) == 0 {
		b.WriteString("(none)\n")
		return b.String()
	}
	if err := data.Indent(jsontext.WithIndent("  ")); err != nil {
		data = jsontext.Value(ev.Payload.Data)
	}
	text := string(data)
	if len(text) > RenderGenericPayloadMax {
		cut := RenderGenericPayloadMax
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = fmt.Sprintf("%s\n… (%d more bytes not shown)", text[:cut], len(text)-cut)
	}
	b.WriteString(text)
	b.WriteString("\n")
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
