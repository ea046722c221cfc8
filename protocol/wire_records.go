package protocol

import (
	"net/url"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Limits of a Work display, in bytes of UTF-8. A display that breaks one is
// refused whole, so an operator view never shows a cut or multi-line text.
const (
	MaxDisplayTitle     = 200
	MaxDisplayRef       = 40
	MaxDisplayRequester = 100
	MaxDisplayLabel     = 60
	MaxDisplayURL       = 2048
	MaxDisplayLinks     = 8
)

// Display says what a Work is in the words of the source that knows it: a
// route handler returns it with a match, and the store keeps it on the Work.
// The core never interprets the text.
type Display struct {
	// Title is one line naming the Work (an issue's title, a job's name).
	Title string `json:"title,omitempty"`
	// Ref is a short reference such as #136 or ENG-12.
	Ref string `json:"ref,omitempty"`
	// Requester names who asked for the Work.
	Requester string `json:"requester,omitempty"`
	Links     []Link `json:"links,omitempty"`
}

// Link is one labelled http or https link of a Work display.
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Check refuses a display that breaks a limit, with protocol.ErrInvalid
// naming the field: each text one line of valid UTF-8 without control
// characters and within its length, a title or a ref, at most
// MaxDisplayLinks links, each with a label and an absolute http or https URL.
func (d *Display) Check() error {
	if d.Title == "" && d.Ref == "" {
		return Errorf(ErrInvalid, "a display needs a title or a ref")
	}
	for _, f := range [...]struct {
		name, text string
		max        int
	}{{"title", d.Title, MaxDisplayTitle}, {"ref", d.Ref, MaxDisplayRef}, {"requester", d.Requester, MaxDisplayRequester}} {
		if err := checkDisplayText(f.name, f.text, f.max); err != nil {
			return err
		}
	}
	if len(d.Links) > MaxDisplayLinks {
		return Errorf(ErrInvalid, "a display has %d links; keep at most %d", len(d.Links), MaxDisplayLinks)
	}
	for i, l := range d.Links {
		if l.Label == "" {
			return Errorf(ErrInvalid, "display link %d needs a label", i)
		}
		if err := checkDisplayText("link label", l.Label, MaxDisplayLabel); err != nil {
			return err
		}
		if err := checkDisplayURL(i, l.URL); err != nil {
			return err
		}
	}
	return nil
}

// checkDisplayText refuses text that is not one line of printable UTF-8
// within max bytes.
func checkDisplayText(field, s string, max int) error {
	if len(s) > max {
		return Errorf(ErrInvalid, "display %s is %d bytes; keep it within %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return Errorf(ErrInvalid, "display %s is not valid UTF-8", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return Errorf(ErrInvalid, "display %s holds a line break or control character; give one line of text", field)
		}
	}
	return nil
}

// checkDisplayURL refuses a link URL that is not an absolute http or https
// URL within MaxDisplayURL bytes.
func checkDisplayURL(i int, raw string) error {
	if len(raw) > MaxDisplayURL {
		return Errorf(ErrInvalid, "display link %d's URL is %d bytes; keep it within %d", i, len(raw), MaxDisplayURL)
	}
	if err := checkDisplayText("link URL", raw, MaxDisplayURL); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Errorf(ErrInvalid, "display link %d's URL must be an absolute http or https URL", i)
	}
	return nil
}

// RecurrenceRule is a timer's calendar rule: a recurrence kind the arming
// package declares and that kind's rule, which only its package reads
// (recurrence.next answers the next occurrence).
type RecurrenceRule struct {
	Kind string         `json:"kind"`
	Rule jsontext.Value `json:"rule,omitzero"`
}
