package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

func TestTapPrintsOneLinePerEntryAndSaysWhatWasDropped(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	page := client.WirePage{Extension: "probe", Next: 12, Oldest: 11, Entries: []client.WireEntry{
		{Seq: 11, Time: at, Direction: client.WireToExtension, Kind: client.WireRequest, Method: "operation.call", ID: "4", Size: 120, Message: `{"id":4}`},
		{Seq: 12, Time: at, Direction: client.WireFromExtension, Kind: client.WireAnswer, Method: "operation.call", ID: "4", Size: 80, LatencyMicros: 1500, Message: `{"id":4}`},
		{Seq: 13, Time: at, Direction: client.WireToExtension, Kind: client.WireAnswer, Method: "secret.resolve", ID: "9", Size: 60, LatencyMicros: 20, Redacted: true},
		{Seq: 14, Time: at, Direction: client.WireFromExtension, Kind: client.WireNotification, Method: "log", Size: 30},
	}}
	for _, tc := range []struct {
		name  string
		after uint64
		json  bool
		want  []string
	}{
		{"text after a gap", 5, false, []string{
			"--- lines 6 to 10 were dropped from the bounded tap before they were read ---",
			"#11 03:04:05.000 → request operation.call id=4 120B",
			"#12 03:04:05.000 ← answer operation.call id=4 80B 1.5ms",
			"#13 03:04:05.000 → answer secret.resolve id=9 60B 20µs (result redacted)",
			"#14 03:04:05.000 ← notification log 30B",
		}},
		{"text with no gap", 10, false, []string{
			"#11 03:04:05.000 → request operation.call id=4 120B",
		}},
		{"json", 5, true, []string{
			`{"seq":11,"time":"2026-01-02T03:04:05`,
			`{"seq":12,`,
			`{"seq":13,`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeWire(&b, tc.json, tc.after, page); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for i, w := range tc.want {
				if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
					t.Fatalf("line %d: want it to begin %q; got\n%s", i, w, b.String())
				}
			}
			if strings.Contains(b.String(), "dropped") != (tc.after == 5 && !tc.json) {
				t.Fatalf("gap note wrong for after %d:\n%s", tc.after, b.String())
			}
			if tc.json && (!strings.Contains(lines[0], `"kind":"request","method":"operation.call","id":"4","size":120,"message":"{\"id\":4}"}`) ||
				!strings.Contains(lines[1], `"latency_us":1500`) || !strings.Contains(lines[2], `"redacted":true`)) {
				t.Fatalf("--json entries lack their fields:\n%s", b.String())
			}
			if tc.json && len(lines) != len(page.Entries) {
				t.Fatalf("--json printed %d lines; want one per entry (%d)", len(lines), len(page.Entries))
			}
		})
	}
}
