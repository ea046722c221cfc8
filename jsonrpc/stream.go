package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrMessageTooLarge is the protocol error of a line longer than the bound.
var ErrMessageTooLarge = errors.New("message larger than the size bound")

// readBufferSize is how much one read syscall may take from the pipe. The
// library's line reader asks for 4 KiB at a time; serving those from a larger
// buffer turns a 16 MiB message into 64 reads instead of 4096.
const readBufferSize = 256 << 10

// deadliner is a writer whose blocked writes can be bounded (a pollable
// *os.File, a net.Conn).
type deadliner interface {
	SetWriteDeadline(t time.Time) error
}

// guard sits under the library's NDJSON framer, on the bytes. Reading, it
// enforces the message bound (the framer has none) and remembers the start of
// a line that is not JSON, so a protocol error can say what it saw. Writing,
// it keeps every frame one line: a raw newline inside a frame can only be
// JSON whitespace, so it becomes a space, and U+2028/U+2029 (legal raw only
// inside JSON strings) become their escapes, so line readers in other
// languages never split a message. Each write gets a deadline, so a peer that
// stops reading fails the connection instead of hanging it.
type guard struct {
	r      io.Reader
	w      io.Writer
	closeR io.Closer
	closeW io.Closer
	wdl    deadliner

	maxLine      int
	writeTimeout time.Duration

	// Read side: touched only by the one reading goroutine.
	buf       []byte
	start     int
	end       int
	sinceNL   int
	atLineEnd bool

	mu      sync.Mutex
	readErr error  // the first read error, kept for the close reason
	badLine []byte // the start of the last line that did not open with { or [

	// Write side: serialized by the framer's own write mutex.
	scratch []byte

	closeOnce sync.Once
	eof       chan struct{} // closed when the read side ends
}

func newGuard(r io.Reader, w io.Writer, maxLine int, writeTimeout time.Duration) *guard {
	g := &guard{
		r:            r,
		w:            w,
		maxLine:      maxLine,
		writeTimeout: writeTimeout,
		buf:          make([]byte, readBufferSize),
		atLineEnd:    true,
		eof:          make(chan struct{}),
	}
	g.closeR, _ = r.(io.Closer)
	g.closeW, _ = w.(io.Closer)
	g.wdl, _ = w.(deadliner)
	return g
}

// Read implements io.Reader.
func (g *guard) Read(p []byte) (int, error) {
	if g.start == g.end {
		n, err := g.r.Read(g.buf)
		if n <= 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			g.endRead(err)
			return 0, err
		}
		g.start, g.end = 0, n
	}
	n := copy(p, g.buf[g.start:g.end])
	g.start += n
	if err := g.account(p[:n]); err != nil {
		g.endRead(err)
		return 0, err
	}
	return n, nil
}

// account tracks line lengths over the bytes about to be handed up.
func (g *guard) account(b []byte) error {
	for len(b) > 0 {
		if g.atLineEnd {
			g.noteLineStart(b)
			g.atLineEnd = false
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			g.sinceNL += len(b)
			if g.sinceNL > g.maxLine {
				return fmt.Errorf("%w: a line passed %d bytes without ending", ErrMessageTooLarge, g.maxLine)
			}
			return nil
		}
		if g.sinceNL+i > g.maxLine {
			return fmt.Errorf("%w: a line of %d bytes, over the %d-byte bound", ErrMessageTooLarge, g.sinceNL+i, g.maxLine)
		}
		g.sinceNL = 0
		g.atLineEnd = true
		b = b[i+1:]
	}
	return nil
}

// noteLineStart remembers the opening of a line that cannot be a JSON-RPC
// message, for the error that will close the connection.
func (g *guard) noteLineStart(b []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	if i < len(b) && (b[i] == '{' || b[i] == '[') {
		return
	}
	end := min(len(b), i+80)
	if nl := bytes.IndexByte(b[:end], '\n'); nl >= 0 {
		end = nl
	}
	g.mu.Lock()
	g.badLine = append(g.badLine[:0], b[:end]...)
	g.mu.Unlock()
}

func (g *guard) endRead(err error) {
	g.mu.Lock()
	if g.readErr == nil {
		g.readErr = err
	}
	g.mu.Unlock()
	g.closeOnce.Do(func() { close(g.eof) })
}

// Write implements io.Writer. The framer hands it exactly one frame, ending
// in its newline, per call.
func (g *guard) Write(p []byte) (int, error) {
	frame := g.sanitize(p)
	if g.wdl != nil && g.writeTimeout > 0 {
		_ = g.wdl.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	}
	n, err := g.w.Write(frame)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("write blocked for %s: the peer is not reading: %w", g.writeTimeout, err)
		}
		return min(n, len(p)), err
	}
	return len(p), nil
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// sanitize returns the frame with interior newlines as spaces and the two
// JavaScript line terminators escaped. The common frame needs neither and is
// returned as it is.
func (g *guard) sanitize(p []byte) []byte {
	if len(p) == 0 {
		return p
	}
	body := p[:len(p)-1]
	hasNL := bytes.IndexByte(body, '\n') >= 0
	hasSep := bytes.Contains(body, []byte{0xE2, 0x80}) &&
		(bytes.Contains(body, lineSep) || bytes.Contains(body, paraSep))
	if !hasNL && !hasSep {
		return p
	}
	out := g.scratch[:0]
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\n':
			out = append(out, ' ')
		case c == 0xE2 && i+2 < len(body) && body[i+1] == 0x80 && (body[i+2] == 0xA8 || body[i+2] == 0xA9):
			if body[i+2] == 0xA8 {
				out = append(out, `\u2028`...)
			} else {
				out = append(out, `\u2029`...)
			}
			i += 2
		default:
			out = append(out, c)
		}
	}
	out = append(out, '\n')
	if cap(out) <= 1<<20 {
		g.scratch = out
	}
	return out
}

// Close closes both directions.
func (g *guard) Close() error {
	var errs []error
	if g.closeW != nil {
		errs = append(errs, g.closeW.Close())
	}
	if g.closeR != nil && g.closeR != g.closeW {
		errs = append(errs, g.closeR.Close())
	}
	return errors.Join(errs...)
}

// closeWrite closes only the writing direction, so the peer reads EOF while
// this side still reads its last answers.
func (g *guard) closeWrite() error {
	if g.closeW != nil && g.closeW != g.closeR {
		return g.closeW.Close()
	}
	return nil
}

// state reports what the read side saw, for the close reason.
func (g *guard) state() (readErr error, badLine []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readErr, bytes.Clone(g.badLine)
}
