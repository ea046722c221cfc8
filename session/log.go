package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// DefaultLogLimit bounds an extension's stderr log.
const DefaultLogLimit = 1 << 20

// truncatedMarker opens a log that passed its bound and started over.
const truncatedMarker = "[open-conduit: this log passed its %d-byte bound and was truncated; older output is gone]\n"

// hostNotePrefix opens each line the host writes into the log.
const hostNotePrefix = "[open-conduit] "

// tailLines is how many of the last stderr lines an error quotes.
const tailLines = 12

// stderrLog keeps an extension's stderr: a file bounded at limit bytes (when
// a write would pass the bound, the file starts over with a marker, so the
// newest output is always there) and the last lines in memory, for the
// error a failed start or a crash reports.
type stderrLog struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	size  int64
	limit int64
	tail  []string
	part  []byte
}

func openStderrLog(path string, limit int64) (*stderrLog, error) {
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	l := &stderrLog{path: path, limit: limit}
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

// Write appends p (the extension's stderr) to the file within its bound
// and keeps its last lines.
func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepTail(p)
	if err := l.writeFile(p); err != nil {
		return 0, err
	}
	return len(p), nil
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
	_ = l.writeFile([]byte(hostNotePrefix + fmt.Sprintf(format, args...) + "\n"))
}

func (l *stderrLog) keepTail(p []byte) {
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.addLine(string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	if len(l.part) > 4096 {
		l.addLine(string(l.part))
		l.part = l.part[:0]
	}
}

func (l *stderrLog) addLine(s string) {
	l.tail = append(l.tail, clipLine(s))
	if len(l.tail) > tailLines {
		l.tail = l.tail[len(l.tail)-tailLines:]
	}
}

// Tail returns the last tailLines lines of stderr, oldest first; an
// unfinished last line counts as one.
func (l *stderrLog) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.tail)
	if len(l.part) > 0 {
		out = append(out, clipLine(string(l.part)))
	}
	return out[max(0, len(out)-tailLines):]
}

// clipLine shortens a line an error quotes; the log file keeps all of it.
func clipLine(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// resetTail forgets the lines of an earlier process.
func (l *stderrLog) resetTail() {
	l.mu.Lock()
	l.tail, l.part = nil, nil
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
	err := l.f.Close()
	l.f = nil
	return err
}
