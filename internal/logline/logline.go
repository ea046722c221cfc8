// Package logline keeps a log from flooding: a slog.Handler that passes
// each distinct line once an interval and counts its repeats instead of
// writing them. A line is its level, message, attributes and the
// handler's own (With, WithGroup); its time is not part of it. When an
// interval in which a line repeated ends, one summary follows, at the
// line's level: "last message repeated N times", with the repeated count
// and the line's message and attributes, so it says which line. The first
// line of the next interval is written again in full. It wraps any
// handler, text or JSON.
package logline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultInterval is how often a repeating line is written in full.
const DefaultInterval = 10 * time.Second

// maxLines bounds how many distinct lines the handler remembers; past it,
// the oldest are summarized and forgotten.
const maxLines = 256

// Handler is a slog.Handler that counts repeated lines rather than writing
// them. Handlers derived with WithAttrs and WithGroup share its memory.
type Handler struct {
	inner slog.Handler
	// scope is what WithAttrs and WithGroup added, as part of a line's key.
	scope string
	s     *state
}

// state is the memory every derived handler shares.
type state struct {
	mu       sync.Mutex
	interval time.Duration
	now      func() time.Time
	lines    map[string]*line
	timer    *time.Timer
}

// line is one distinct line: when its interval began, how often it
// repeated since, and the record (and handler) to summarize it with.
type line struct {
	since    time.Time
	repeated int
	rec      slog.Record
	inner    slog.Handler
}

// New wraps inner. interval <= 0 means DefaultInterval.
func New(inner slog.Handler, interval time.Duration) *Handler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Handler{inner: inner, s: &state{interval: interval, now: time.Now, lines: map[string]*line{}}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.scope)
	for _, a := range attrs {
		writeAttr(&b, "", a)
	}
	return &Handler{inner: h.inner.WithAttrs(attrs), scope: b.String(), s: h.s}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), scope: h.scope + "{" + name + "}", s: h.s}
}

// Handle writes r unless the same line was written earlier in its
// interval; then it only counts it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	key := h.key(r)
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if l, ok := s.lines[key]; ok {
		if now.Sub(l.since) < s.interval {
			l.repeated++
			s.arm(l.since.Add(s.interval).Sub(now))
			return nil
		}
		s.summarize(ctx, key, l)
	}
	if len(s.lines) >= maxLines {
		s.forget(ctx, now)
	}
	s.lines[key] = &line{since: now, rec: r.Clone(), inner: h.inner}
	return h.inner.Handle(ctx, r)
}

// Flush writes the summary of every line that repeated, and forgets them:
// serve calls it as it exits, so no count is lost.
func (h *Handler) Flush() {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, l := range s.lines {
		s.summarize(context.Background(), key, l)
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// arm makes sure a timer writes the summaries once the interval ends,
// even when the line never comes again (s.mu held).
func (s *state) arm(after time.Duration) {
	if s.timer != nil {
		return
	}
	s.timer = time.AfterFunc(max(after, time.Millisecond), s.expire)
}

// expire summarizes and forgets the lines whose interval ended, and sets
// the timer again for those still running.
func (s *state) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	now := s.now()
	var next time.Duration
	for key, l := range s.lines {
		left := l.since.Add(s.interval).Sub(now)
		switch {
		case left <= 0:
			s.summarize(context.Background(), key, l)
		case l.repeated > 0 && (next == 0 || left < next):
			next = left
		}
	}
	if next > 0 {
		s.arm(next)
	}
}

// summarize writes one line's count of repeats, if any, and forgets it
// (s.mu held).
func (s *state) summarize(ctx context.Context, key string, l *line) {
	delete(s.lines, key)
	if l.repeated == 0 {
		return
	}
	r := slog.NewRecord(s.now(), l.rec.Level, fmt.Sprintf("last message repeated %d times", l.repeated), l.rec.PC)
	r.AddAttrs(slog.Int("repeated", l.repeated), slog.String("message", l.rec.Message))
	l.rec.Attrs(func(a slog.Attr) bool {
		r.AddAttrs(a)
		return true
	})
	_ = l.inner.Handle(ctx, r)
}

// forget makes room for a line: it summarizes and forgets the lines whose
// interval ended and, when none had, the one whose interval began first
// (s.mu held).
func (s *state) forget(ctx context.Context, now time.Time) {
	for key, l := range s.lines {
		if now.Sub(l.since) >= s.interval {
			s.summarize(ctx, key, l)
		}
	}
	if len(s.lines) < maxLines {
		return
	}
	keys := make([]string, 0, len(s.lines))
	for k := range s.lines {
		keys = append(keys, k)
	}
	oldest := slices.MinFunc(keys, func(a, b string) int { return s.lines[a].since.Compare(s.lines[b].since) })
	s.summarize(ctx, oldest, s.lines[oldest])
}

// key is what makes a line the same line: the handler's scope, the level,
// the message and the attributes, not the time.
func (h *Handler) key(r slog.Record) string {
	var b strings.Builder
	b.WriteString(h.scope)
	b.WriteString("|")
	b.WriteString(r.Level.String())
	b.WriteString("|")
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, "", a)
		return true
	})
	return b.String()
}

func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			writeAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	fmt.Fprintf(b, "|%s%s=%q", prefix, a.Key, v.String())
}
