package logline

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// buffer is a log's output, safe to read while the timer writes.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.b.String()), "\n")
}

// formats are the handlers the dedupe wraps.
var formats = map[string]func(*buffer) slog.Handler{
	"text": func(b *buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	"json": func(b *buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
}

// clock is a time the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLogger(format string, interval time.Duration) (*slog.Logger, *Handler, *buffer, *clock) {
	out := &buffer{}
	h := New(formats[format](out), interval)
	c := &clock{t: time.Unix(1_000_000, 0)}
	h.s.now = c.now
	return slog.New(h), h, out, c
}

// count is how many output lines contain every one of want.
func count(lines []string, want ...string) int {
	n := 0
	for _, l := range lines {
		all := true
		for _, w := range want {
			all = all && strings.Contains(l, w)
		}
		if all {
			n++
		}
	}
	return n
}

func TestRepeatedLinesAreCountedNotRepeated(t *testing.T) {
	for format := range formats {
		t.Run(format, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				log  func(l *slog.Logger, c *clock)
				// want: each message's full lines and its repeat count
				// in the summary (0: no summary).
				want map[string][2]int
			}{
				{"the_same_line", func(l *slog.Logger, _ *clock) {
					for range 37733 {
						l.Error("commit failed", "err", errors.New("no space left on device"))
					}
				}, map[string][2]int{"commit failed": {1, 37732}}},
				{"interleaved_lines", func(l *slog.Logger, _ *clock) {
					for range 100 {
						l.Warn("task failed", "task", "tick")
						l.Error("commit failed", "err", "disk full")
					}
				}, map[string][2]int{"task failed": {1, 99}, "commit failed": {1, 99}}},
				{"different_attributes_are_different_lines", func(l *slog.Logger, _ *clock) {
					for i := range 10 {
						l.Info("started", "pid", i)
					}
					l.With("extension", "a").Info("crashed")
					l.With("extension", "b").Info("crashed")
				}, map[string][2]int{"started": {10, 0}, "crashed": {2, 0}}},
				{"a_new_interval_writes_it_again", func(l *slog.Logger, c *clock) {
					for range 5 {
						l.Error("commit failed")
					}
					c.t = c.t.Add(time.Minute)
					for range 3 {
						l.Error("commit failed")
					}
				}, map[string][2]int{"commit failed": {2, 6}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					l, h, out, c := newLogger(format, time.Minute)
					tc.log(l, c)
					h.Flush()
					lines := out.lines()
					for msg, want := range tc.want {
						full := count(lines, msg) - count(lines, "last message repeated", msg)
						repeated := 0
						for _, line := range lines {
							var n int
							if strings.Contains(line, msg) && strings.Contains(line, "last message repeated") {
								if _, err := fmt.Sscanf(line[strings.Index(line, "repeated ")+len("repeated "):], "%d", &n); err != nil {
									t.Fatalf("summary %q: %v", line, err)
								}
								repeated += n
							}
						}
						if full != want[0] || repeated != want[1] {
							t.Errorf("%q: %d full lines and %d counted, want %d and %d:\n%s", msg, full, repeated, want[0], want[1], strings.Join(lines, "\n"))
						}
					}
				})
			}
		})
	}
}

func TestSummaryIsWrittenWhenTheIntervalEnds(t *testing.T) {
	out := &buffer{}
	l := slog.New(New(slog.NewTextHandler(out, nil), 50*time.Millisecond))
	for range 1000 {
		l.Error("commit failed", "err", "disk full")
	}
	// Nothing more is logged: the timer alone writes the summary.
	deadline := time.Now().Add(30 * time.Second)
	for count(out.lines(), "last message repeated 999 times", `message="commit failed"`, `err="disk full"`) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary:\n%s", strings.Join(out.lines(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(out.lines(), `msg="commit failed"`); n != 1 {
		t.Fatalf("%d full lines", n)
	}
}
