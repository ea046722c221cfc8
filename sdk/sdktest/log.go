package sdktest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// logBook keeps what the extension side logged (the SDK logs an unauthored
// handler error or a panic there, since the wire says only "internal
// error"), and passes each line to a test's log while it runs.
type logBook struct {
	mu    sync.Mutex
	lines []logLine
	logf  func(string) // nil: nobody to tell, or the test has ended
}

// logLine is one record: the wire method it was about, the detail an
// error or panic carried, and the whole line.
type logLine struct {
	method, detail, text string
	quiet                bool // below Info: kept, not passed to the test's log
}

// mark is where the book is now, for since.
func (b *logBook) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lines)
}

// since returns the details logged after mark about method.
func (b *logBook) since(mark int, method string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range b.lines[min(mark, len(b.lines)):] {
		if l.method == method && l.detail != "" {
			out = append(out, l.detail)
		}
	}
	return out
}

// lines returns every line logged.
func (b *logBook) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.lines))
	for i, l := range b.lines {
		out[i] = l.text
	}
	return out
}

// stop ends the passing of lines to the test's log.
func (b *logBook) stop() {
	b.mu.Lock()
	b.logf = nil
	b.mu.Unlock()
}

func (b *logBook) add(l logLine) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, l)
	if b.logf != nil && !l.quiet {
		b.logf("extension log: " + l.text)
	}
}

// bookHandler is the slog.Handler the extension side logs through.
type bookHandler struct {
	book  *logBook
	attrs []slog.Attr
}

func (h *bookHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *bookHandler) Handle(_ context.Context, r slog.Record) error {
	l := logLine{quiet: r.Level < slog.LevelInfo}
	var text strings.Builder
	fmt.Fprintf(&text, "%s %s", r.Level, r.Message)
	note := func(a slog.Attr) bool {
		v := a.Value.Resolve().String()
		switch a.Key {
		case "method":
			l.method = v
		case "err":
			l.detail = v
		case "panic":
			l.detail = "panic: " + v
		}
		fmt.Fprintf(&text, " %s=%q", a.Key, v)
		return true
	}
	for _, a := range h.attrs {
		note(a)
	}
	r.Attrs(note)
	l.text = text.String()
	h.book.add(l)
	return nil
}

func (h *bookHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &bookHandler{book: h.book, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *bookHandler) WithGroup(string) slog.Handler { return h }

// unauthoredError is an internal error answered to a call, with what the
// extension logged about it.
type unauthoredError struct {
	name string
	err  error
	log  []string
}

func (e *unauthoredError) Error() string {
	return fmt.Sprintf("%s: %v (extension log: %s)", e.name, e.err, strings.Join(e.log, "; "))
}

func (e *unauthoredError) Unwrap() error { return e.err }
