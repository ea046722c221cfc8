package protocol

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Work states.
const (
	WorkPending   = "pending"
	WorkRunning   = "running"
	WorkWaiting   = "waiting"
	WorkCompleted = "completed"
	WorkFailed    = "failed"
	WorkCancelled = "cancelled"
)

// WorkView is a Work as a package sees it.
type WorkView struct {
	ID      string   `json:"id"`
	Scope   string   `json:"scope_id"`
	Kind    string   `json:"kind"`
	Keys    []string `json:"keys,omitempty"`
	State   string   `json:"state"`
	Display *Display `json:"display,omitempty"`
}

// Display limits, in bytes of UTF-8.
const (
	MaxDisplayTitle     = 200
	MaxDisplayRef       = 40
	MaxDisplayRequester = 100
	MaxDisplayLabel     = 60
	MaxDisplayURL       = 2048
	MaxDisplayLinks     = 8
)

// Display says what a Work is in the words of the source that knows: a
// title, a short ref (#136, ENG-12), who asked, and links. The host stores it
// and never interprets the text.
type Display struct {
	Title     string `json:"title,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Requester string `json:"requester,omitempty"`
	Links     []Link `json:"links,omitempty"`
}

// Link is one labelled http or https link of a display.
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Check applies the display limits: every field one line of UTF-8 without
// control characters; title at most 200 bytes, ref 40, requester 100, a
// link's label 60 (required) and its URL 2048 (absolute http or https); a
// title or a ref; at most 8 links. A display that breaks one is refused
// whole, never cut into something its source did not say.
func (d *Display) Check() error {
	if d == nil {
		return nil
	}
	if d.Title == "" && d.Ref == "" {
		return Errorf(ErrInvalid, "a display needs a title or a ref")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"title", d.Title, MaxDisplayTitle}, {"ref", d.Ref, MaxDisplayRef}, {"requester", d.Requester, MaxDisplayRequester}} {
		if err := checkLine(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	if len(d.Links) > MaxDisplayLinks {
		return Errorf(ErrInvalid, "a display has at most %d links, not %d", MaxDisplayLinks, len(d.Links))
	}
	for i, l := range d.Links {
		name := fmt.Sprintf("links[%d]", i)
		if l.Label == "" {
			return Errorf(ErrInvalid, "%s needs a label", name)
		}
		if err := checkLine(name+".label", l.Label, MaxDisplayLabel); err != nil {
			return err
		}
		if err := checkLine(name+".url", l.URL, MaxDisplayURL); err != nil {
			return err
		}
		if u, err := url.Parse(l.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Errorf(ErrInvalid, "%s.url must be an absolute http or https URL", name)
		}
	}
	return nil
}

// checkLine checks one display field: valid UTF-8, no control characters
// (so one line), at most max bytes.
func checkLine(name, v string, max int) error {
	switch {
	case len(v) > max:
		return Errorf(ErrInvalid, "display %s is %d bytes; the limit is %d", name, len(v), max)
	case !utf8.ValidString(v):
		return Errorf(ErrInvalid, "display %s is not UTF-8", name)
	case strings.IndexFunc(v, unicode.IsControl) >= 0 || strings.ContainsAny(v, "\u2028\u2029"):
		return Errorf(ErrInvalid, "display %s must be one line without control characters", name)
	}
	return nil
}

// WorkKindTriggerParams asks a Work kind's package which input of a new Work
// is its trigger. It runs inside the creating transaction, bounded, and may
// make no callback.
type WorkKindTriggerParams struct {
	Kind   string   `json:"kind"`
	Work   WorkView `json:"work"`
	Inputs []Event  `json:"inputs"`
}

// WorkKindTriggerResult names the trigger input by Event ID; an ID that is
// not one of the inputs falls back to the first input.
type WorkKindTriggerResult struct {
	Trigger string `json:"trigger"`
}

// WorkCancelParams cancels a Work of one of the caller's own kinds, in one
// of its scopes.
type WorkCancelParams struct {
	WorkID string `json:"work_id"`
	Reason string `json:"reason,omitempty"`
}

// WorkCancelResult is empty: the Work is cancelled.
type WorkCancelResult struct{}

// Work methods whose wire types exist.
var (
	// WorkKindTrigger picks a new Work's trigger input.
	WorkKindTrigger = describe[WorkKindTriggerParams, WorkKindTriggerResult](MethodWorkKindTrigger)
	// WorkCancel cancels Work of an own kind.
	WorkCancel = describe[WorkCancelParams, WorkCancelResult](MethodWorkCancel)
)
