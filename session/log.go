package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultLogLimit bounds an extension's stderr log.
const DefaultLogLimit = 1 << 20

// Defaults of LogRate: what an extension's stderr may add to its log each
// second before lines are dropped.
const (
	DefaultLogLines = 1000
	DefaultLogBytes = 256 << 10
)

// LogRate bounds what an extension's stderr adds to its log each second.
// Lines over it are dropped and counted: the log says how many, once the
// next second begins (or the process ends).
type LogRate struct {
	// Lines a second (default DefaultLogLines).
	Lines int
	// Bytes a second (default DefaultLogBytes).
	Bytes int
}

// truncatedMarker opens a log that passed its bound and started over.
const truncatedMarker = "[open-conduit: this log passed its %d-byte bound and was truncated; older output is gone]\n"

// droppedMarker says what a second over the rate dropped.
const droppedMarker = hostNotePrefix + "dropped %d lines (%d bytes) of stderr: over the log's rate of %d lines or %d bytes a second\n"

// hostNotePrefix opens each line the host writes into the log.
const hostNotePrefix = "[open-conduit] "

// tailLines is how many of the last stderr lines an error quotes.
const tailLines = 12

// maxTailBytes bounds what the tail keeps of a stream of long lines.
const maxTailBytes = 64 << 10

// How stderr is read: in reads of up to drainBuf bytes, pausing drainPace
// after a read that emptied the pipe or while lines are being dropped. An
// extension writing a line at a time then costs the daemon one wakeup a
// pause, not one a line; one writing faster than the rate waits on the
// pipe instead of costing a core.
const (
	drainBuf   = 64 << 10
	drainPace  = 10 * time.Millisecond
	rateWindow = time.Second
)

// stderrLog keeps an extension's stderr: a file bounded at limit bytes (when
// a write would pass the bound, the file starts over with a marker, so the
// newest output is always there), fed at most rate a second, and the last
// lines in memory, for the error a failed start or a crash reports. The
// tail keeps the last lines even when the file dropped them.
type stderrLog struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	size  int64
	limit int64
	rate  LogRate
	last  []byte // the end of the stream, for Tail
	out   []byte // what one read adds to the file

	// The current second's budget and what it dropped.
	windowStart  time.Time
	lines, bytes int
	dropLines    int
	dropBytes    int
	// The stream stopped mid-line; dropping says whether that line is
	// being dropped.
	midLine, dropping bool
}

func openStderrLog(path string, limit int64, rate LogRate) (*stderrLog, error) {
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	if rate.Lines <= 0 {
		rate.Lines = DefaultLogLines
	}
	if rate.Bytes <= 0 {
		rate.Bytes = DefaultLogBytes
	}
	l := &stderrLog{path: path, limit: limit, rate: rate}
	if path == "" {
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l.f, l.size = f, st.Size()
	return l, nil
}

// drain reads an extension's stderr to its end into the log.
func (l *stderrLog) drain(r io.Reader) {
	buf := make([]byte, drainBuf)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			l.ingest(buf[:n], time.Now())
		}
		if err != nil {
			break
		}
		if n < len(buf) || l.overRate() {
			time.Sleep(drainPace)
		}
	}
	l.mu.Lock()
	l.flushDropped()
	l.mu.Unlock()
}

// overRate reports whether the current second's budget is spent.
func (l *stderrLog) overRate() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropLines > 0 || l.midLine && l.dropping
}

// ingest takes one read of stderr: the tail keeps all of it, the file what
// the second's budget admits, in one write.
func (l *stderrLog) ingest(p []byte, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepTail(p)
	if now.Sub(l.windowStart) >= rateWindow {
		l.flushDropped()
		l.windowStart, l.lines, l.bytes = now, 0, 0
	}
	l.out = l.out[:0]
	for len(p) > 0 {
		if l.midLine {
			p = l.continueLine(p)
			continue
		}
		p = l.admit(p)
	}
	if len(l.out) > 0 {
		_ = l.writeFile(l.out)
	}
}

// continueLine handles p up to the end of the line the stream stopped in.
func (l *stderrLog) continueLine(p []byte) []byte {
	seg, rest, done := p, []byte(nil), false
	if j := bytes.IndexByte(p, '\n'); j >= 0 {
		seg, rest, done = p[:j+1], p[j+1:], true
	}
	if !l.dropping && l.bytes+len(seg) > l.rate.Bytes {
		// A line longer than the budget: what was kept of it ends here.
		l.out = append(l.out, '\n')
		l.dropping = true
	}
	if l.dropping {
		l.dropBytes += len(seg)
		if done {
			l.dropLines++
		}
	} else {
		l.out = append(l.out, seg...)
		l.bytes += len(seg)
		if done {
			l.lines++
		}
	}
	l.midLine = !done
	return rest
}

// admit keeps the whole lines at the start of p the budget allows, and
// drops the rest of p when it is spent.
func (l *stderrLog) admit(p []byte) []byte {
	lines, room := l.rate.Lines-l.lines, l.rate.Bytes-l.bytes
	if lines <= 0 || room <= 0 {
		l.dropLines += bytes.Count(p, []byte{'\n'})
		l.dropBytes += len(p)
		l.midLine, l.dropping = p[len(p)-1] != '\n', true
		return nil
	}
	take := p[:min(len(p), room)]
	cut, n := 0, 0
	for n < lines {
		j := bytes.IndexByte(take[cut:], '\n')
		if j < 0 {
			break
		}
		cut += j + 1
		n++
	}
	if n == 0 {
		if len(p) <= room {
			// The start of a line that fits so far.
			l.out = append(l.out, p...)
			l.bytes += len(p)
			l.midLine, l.dropping = true, false
			return nil
		}
		// One line longer than what is left of the budget.
		l.lines = l.rate.Lines
		return p
	}
	l.out = append(l.out, p[:cut]...)
	l.lines += n
	l.bytes += cut
	if n == lines {
		l.lines = l.rate.Lines
	} else if len(take) < len(p) {
		// The next line ends past the byte budget.
		l.bytes = l.rate.Bytes
	}
	return p[cut:]
}

// flushDropped writes what the last second dropped, if anything.
func (l *stderrLog) flushDropped() {
	if l.dropLines == 0 && l.dropBytes == 0 {
		return
	}
	note := fmt.Sprintf(droppedMarker, l.dropLines, l.dropBytes, l.rate.Lines, l.rate.Bytes)
	if l.midLine && !l.dropping {
		note = "\n" + note
		l.dropping = true
	}
	_ = l.writeFile([]byte(note))
	l.dropLines, l.dropBytes = 0, 0
}

// writeFile appends data to the file, starting it over with a marker when
// the write would pass the bound.
func (l *stderrLog) writeFile(data []byte) error {
	if l.f == nil {
		return nil
	}
	if int64(len(data)) > l.limit/2 {
		data = data[len(data)-int(l.limit/2):]
	}
	if l.size+int64(len(data)) > l.limit {
		if err := l.f.Truncate(0); err == nil {
			n, _ := fmt.Fprintf(l.f, truncatedMarker, l.limit)
			l.size = int64(n)
		}
	}
	n, err := l.f.Write(data)
	l.size += int64(n)
	return err
}

// Note writes a line of the host's own into the log (start, exit). It is
// not part of the tail an error quotes, which is the extension's alone.
func (l *stderrLog) Note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushDropped()
	line := hostNotePrefix + fmt.Sprintf(format, args...) + "\n"
	if l.midLine && !l.dropping {
		line = "\n" + line
	}
	_ = l.writeFile([]byte(line))
}

// keepTail keeps the end of the stream: its last tailLines lines and the
// unfinished one, at most maxTailBytes.
func (l *stderrLog) keepTail(p []byte) {
	if start := lastLinesStart(p, tailLines+1); start > 0 {
		l.last = append(l.last[:0], p[start:]...)
	} else {
		l.last = append(l.last, p...)
		l.last = l.last[lastLinesStart(l.last, tailLines+1):]
	}
	if len(l.last) > maxTailBytes {
		l.last = append(l.last[:0], l.last[len(l.last)-maxTailBytes:]...)
	}
}

// lastLinesStart is where the last n line starts of b begin (a line start
// follows a newline), 0 when b has fewer.
func lastLinesStart(b []byte, n int) int {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := 0; i < n-1; i++ {
		j := bytes.LastIndexByte(b[:end], '\n')
		if j < 0 {
			return 0
		}
		end = j
	}
	j := bytes.LastIndexByte(b[:end], '\n')
	return j + 1
}

// Tail returns the last tailLines lines of stderr, oldest first; an
// unfinished last line counts as one.
func (l *stderrLog) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := bytes.TrimSuffix(l.last, []byte{'\n'})
	if len(text) == 0 {
		return nil
	}
	lines := bytes.Split(text, []byte{'\n'})
	lines = lines[max(0, len(lines)-tailLines):]
	out := make([]string, len(lines))
	for i, s := range lines {
		out[i] = clipLine(string(s))
	}
	return out
}

// clipLine shortens a line an error quotes; the log file keeps all of it.
func clipLine(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// resetTail forgets the lines of an earlier process and its stream's
// state.
func (l *stderrLog) resetTail() {
	l.mu.Lock()
	l.last = nil
	l.midLine, l.dropping = false, false
	l.mu.Unlock()
}

// Path is the log file ("" when there is none).
func (l *stderrLog) Path() string { return l.path }

func (l *stderrLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	l.flushDropped()
	err := l.f.Close()
	l.f = nil
	return err
}
