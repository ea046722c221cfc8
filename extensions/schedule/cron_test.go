package schedule

import (
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestCronNextIsTheFirstOccurrenceAfter: each expression's next occurrence
// after a time, in UTC, strictly after it.
func TestCronNextIsTheFirstOccurrenceAfter(t *testing.T) {
	cases := []struct {
		expr, after, want string
	}{
		{"* * * * *", "2026-03-04T10:15:30Z", "2026-03-04T10:16:00Z"},
		{"* * * * *", "2026-03-04T10:15:00Z", "2026-03-04T10:16:00Z"}, // strictly after
		{"*/15 * * * *", "2026-03-04T10:15:00Z", "2026-03-04T10:30:00Z"},
		{"5 4 * * *", "2026-03-04T04:05:00Z", "2026-03-05T04:05:00Z"},
		{"0 9-17/4 * * *", "2026-03-04T10:00:00Z", "2026-03-04T13:00:00Z"},
		{"0,30 * * * *", "2026-03-04T10:29:59Z", "2026-03-04T10:30:00Z"},
		{"0 0 1 * *", "2026-01-31T12:00:00Z", "2026-02-01T00:00:00Z"},
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},   // next leap day
		{"0 0 * * mon", "2026-03-04T00:00:00Z", "2026-03-09T00:00:00Z"},  // 4 March 2026 is a Wednesday
		{"0 0 * * 7", "2026-03-04T00:00:00Z", "2026-03-08T00:00:00Z"},    // 7 is Sunday
		{"0 0 13 * fri", "2026-03-04T00:00:00Z", "2026-03-06T00:00:00Z"}, // either day field
		{"0 12 * jan-mar/2 *", "2026-01-31T13:00:00Z", "2026-03-01T12:00:00Z"},
		{"59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"},
		{"@hourly", "2026-03-04T10:15:00Z", "2026-03-04T11:00:00Z"},
		{"@daily", "2026-03-04T10:15:00Z", "2026-03-05T00:00:00Z"},
		{"@every 30s", "2026-03-04T10:15:10Z", "2026-03-04T10:15:30Z"},
		{"@every 30s", "2026-03-04T10:15:30Z", "2026-03-04T10:16:00Z"},
		{"@every 1h30m", "1970-01-01T01:00:00Z", "1970-01-01T01:30:00Z"},
	}
	for _, c := range cases {
		s, err := Parse(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		got, ok := s.Next(at(c.after))
		if !ok || !got.Equal(at(c.want)) {
			t.Errorf("%q after %s: %v (ok %v), want %s", c.expr, c.after, got, ok, c.want)
		}
	}
}

// TestCronRefusesABadExpressionSayingWhy: each bad expression is refused
// with a message naming what to change.
func TestCronRefusesABadExpressionSayingWhy(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"", "5 fields"},
		{"* * * *", "5 fields"},
		{"* * * * * *", "5 fields"},
		{"60 * * * *", "minute \"60\": use a number from 0 to 59"},
		{"* 24 * * *", "hour"},
		{"* * 0 * *", "day of month"},
		{"* * * 13 *", "month"},
		{"* * * * 8", "day of week"},
		{"*/0 * * * *", "step"},
		{"5-1 * * * *", "backwards"},
		{"x * * * *", "minute"},
		{"0 0 30 2 *", "never fires"},
		{"@every", "needs a duration"},
		{"@every soon", "not a duration"},
		{"@every 500ms", "shorter than 1s"},
		{"@fortnightly", "not a known schedule"},
	}
	for _, c := range cases {
		_, err := Parse(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.expr, err, c.want)
		}
	}
	// Negative control: a good expression of each shape parses.
	for _, good := range []string{"0 0 * * *", "@every 1s", "@weekly", "*/5 1,2 1-15 JAN sun-sat"} {
		if _, err := Parse(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
