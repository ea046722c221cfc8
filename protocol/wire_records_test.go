package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestDisplayCheckRefusesWhatBreaksALimit(t *testing.T) {
	link := func(label, url string) []Link { return []Link{{Label: label, URL: url}} }
	eight := make([]Link, MaxDisplayLinks)
	for i := range eight {
		eight[i] = Link{Label: "l", URL: "https://example.com"}
	}
	for _, tc := range []struct {
		name string
		d    Display
		ok   bool
	}{
		{"a title alone", Display{Title: "Fix the flaky build"}, true},
		{"a ref alone", Display{Ref: "ENG-12"}, true},
		{"everything at its limits", Display{Title: strings.Repeat("t", MaxDisplayTitle), Ref: strings.Repeat("r", MaxDisplayRef),
			Requester: strings.Repeat("q", MaxDisplayRequester), Links: eight}, true},
		{"an http link", Display{Title: "t", Links: link("Issue #1", "http://example.com/1")}, true},
		{"a multi-byte title within its bytes", Display{Title: strings.Repeat("é", MaxDisplayTitle/2)}, true},
		{"neither title nor ref", Display{Requester: "ann"}, false},
		{"a title one byte too long", Display{Title: strings.Repeat("t", MaxDisplayTitle+1)}, false},
		{"a multi-byte title over its bytes", Display{Title: strings.Repeat("é", MaxDisplayTitle/2+1)}, false},
		{"a ref too long", Display{Ref: strings.Repeat("r", MaxDisplayRef+1)}, false},
		{"a requester too long", Display{Title: "t", Requester: strings.Repeat("q", MaxDisplayRequester+1)}, false},
		{"a title on two lines", Display{Title: "a\nb"}, false},
		{"a tab in a ref", Display{Ref: "a\tb"}, false},
		{"a line separator", Display{Title: "a\u2028b"}, false},
		{"invalid UTF-8", Display{Title: "a\xffb"}, false},
		{"nine links", Display{Title: "t", Links: append(eight, Link{Label: "l", URL: "https://example.com"})}, false},
		{"a link without a label", Display{Title: "t", Links: link("", "https://example.com")}, false},
		{"a label too long", Display{Title: "t", Links: link(strings.Repeat("l", MaxDisplayLabel+1), "https://example.com")}, false},
		{"a javascript link", Display{Title: "t", Links: link("x", "javascript:alert(1)")}, false},
		{"a relative link", Display{Title: "t", Links: link("x", "/issues/1")}, false},
		{"a link without a host", Display{Title: "t", Links: link("x", "https:///x")}, false},
		{"a link too long", Display{Title: "t", Links: link("x", "https://example.com/"+strings.Repeat("p", MaxDisplayURL))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Check()
			if tc.ok && err != nil {
				t.Errorf("Check: %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Errorf("Check: %v, want invalid", err)
			}
		})
	}
}
