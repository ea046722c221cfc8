package protocol

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRenderGenericSaysWhatTheEventIsWithinItsBound: the generic rendering
// names the type, source, time and scope, indents the payload, and cuts a
// payload over the bound on a rune boundary, saying how much it left out.
func TestRenderGenericSaysWhatTheEventIsWithinItsBound(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	big := `{"text":"` + strings.Repeat("é", RenderGenericPayloadMax) + `"}`
	cases := []struct {
		name    string
		ev      Event
		want    []string
		notWant []string
		max     int
	}{
		{"a small payload is indented whole",
			Event{Type: "manual.request", Source: "operator", Scope: "acme", Time: at, Payload: Payload{Schema: "manual.request.v1", Data: []byte(`{"a":{"b":1}}`)}},
			[]string{"manual.request from operator at 2026-11-30T09:30:00Z in scope acme", "payload (manual.request.v1):", "{\n  \"a\": {\n    \"b\": 1\n  }\n}"},
			[]string{"not shown"}, RenderGenericPayloadMax + 200},
		{"no payload says none",
			Event{Type: "x.y", Time: at},
			[]string{"x.y from - at", "(none)"}, nil, 200},
		{"a payload over the bound is cut and counted",
			Event{Type: "big.one", Source: "s", Time: at, Payload: Payload{Data: []byte(big)}},
			[]string{"big.one from s", "more bytes not shown"}, nil, RenderGenericPayloadMax + 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderGeneric(tc.ev)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%.400s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("has %q:\n%.400s", w, got)
				}
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("%d bytes (bound %d), valid UTF-8 %v", len(got), tc.max, utf8.ValidString(got))
			}
		})
	}
}
