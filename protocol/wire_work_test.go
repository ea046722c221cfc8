package protocol

import (
	"errors"
	"strings"
	"testing"
)

// TestDisplayCheckRefusesWhatBreaksALimit: every limit refuses the display
// whole, one byte past it; at the limit it passes.
func TestDisplayCheckRefusesWhatBreaksALimit(t *testing.T) {
	link := func(label, u string) []Link { return []Link{{Label: label, URL: u}} }
	many := make([]Link, MaxDisplayLinks+1)
	for i := range many {
		many[i] = Link{Label: "l", URL: "https://example.com"}
	}
	cases := []struct {
		name string
		d    Display
		ok   bool
	}{
		{"title only", Display{Title: "Fix the build"}, true},
		{"ref only", Display{Ref: "#136"}, true},
		{"title at the limit", Display{Title: strings.Repeat("é", MaxDisplayTitle/2)}, true},
		{"all fields and 8 links", Display{Title: "t", Ref: "r", Requester: "q", Links: many[:MaxDisplayLinks]}, true},
		{"neither title nor ref", Display{Requester: "ann"}, false},
		{"title one byte over", Display{Title: strings.Repeat("a", MaxDisplayTitle+1)}, false},
		{"ref over", Display{Ref: strings.Repeat("a", MaxDisplayRef+1)}, false},
		{"requester over", Display{Title: "t", Requester: strings.Repeat("a", MaxDisplayRequester+1)}, false},
		{"two lines", Display{Title: "one\ntwo"}, false},
		{"line separator", Display{Title: "one\u2028two"}, false},
		{"not UTF-8", Display{Title: "\xff"}, false},
		{"nine links", Display{Title: "t", Links: many}, false},
		{"label missing", Display{Title: "t", Links: link("", "https://example.com")}, false},
		{"label over", Display{Title: "t", Links: link(strings.Repeat("a", MaxDisplayLabel+1), "https://example.com")}, false},
		{"javascript URL", Display{Title: "t", Links: link("x", "javascript:alert(1)")}, false},
		{"relative URL", Display{Title: "t", Links: link("x", "/issues/1")}, false},
		{"URL over", Display{Title: "t", Links: link("x", "https://example.com/"+strings.Repeat("a", MaxDisplayURL))}, false},
		{"http URL", Display{Title: "t", Links: link("Issue #1", "http://example.com/1")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Check()
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want invalid", err)
			}
		})
	}
}
