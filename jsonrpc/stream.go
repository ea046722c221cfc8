package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrMessageTooLarge is the protocol error of a line longer than the bound.
var ErrMessageTooLarge = errors.New("message larger than the size bound")

// errWriteBlocked is the failure of a write the peer did not take in time.
var errWriteBlocked = errors.New("the peer is not reading its input")

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
// enforces the message bound (the framer has none). Writing, it keeps every
// frame one line: a raw newline inside a frame can only be JSON whitespace,
// so it becomes a space, and U+2028/U+2029 (legal raw only inside JSON
// strings) become their escapes, so line readers in other languages never
// split a message.
//
// A frame is written whole or the connection ends. Each write gets a
// deadline; a write that fails (the deadline passed, the pipe broke) closes
// both streams at once and every later write fails without writing, so
// nothing ever follows a partial frame: the peer reads it as a cut-off last
// line, never as a message, and a peer that stops reading fails the
// connection at the deadline instead of hanging it. A frame over the bound is
// never written either (the connection checks sizes before it frames; this
// is the backstop under it).
type guard struct {
	r      io.Reader
	w      io.Writer
	closeR io.Closer
	closeW io.Closer
	wdl    deadliner

	maxLine      int
	writeTimeout time.Duration

	// Read side: touched only by the one reading goroutine.
	buf     []byte
	start   int
	end     int
	sinceNL int

	mu       sync.Mutex
	readErr  error // the first read error, kept for the close reason
	writeErr error // the first failed write; the streams are closed after it

	// Write side: serialized by the framer's own write mutex.
	scratch  []byte
	broken   atomic.Bool // a write failed: nothing more is written
	observer Observer    // sees each frame before it is written; nil: none

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
		b = b[i+1:]
	}
	return nil
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
	if g.broken.Load() {
		return 0, g.failedWrite()
	}
	frame := g.sanitize(p)
	if len(frame)-1 > g.maxLine {
		return 0, g.failWrite(fmt.Errorf("%w: this side refused to write a line of %d bytes, over the %d-byte bound",
			ErrMessageTooLarge, len(frame)-1, g.maxLine))
	}
	if g.observer != nil && len(frame) > 0 {
		g.observer.Observe(true, frame[:len(frame)-1])
	}
	if g.wdl != nil && g.writeTimeout > 0 {
		_ = g.wdl.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	}
	n, err := g.w.Write(frame)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("a write blocked for %s (%d of its %d bytes taken), so the connection was closed: %w",
				g.writeTimeout, n, len(frame), errWriteBlocked)
		}
		return min(n, len(p)), g.failWrite(err)
	}
	return len(p), nil
}

// failWrite records the first failed write and closes both streams, so
// nothing follows a partial frame and the reader ends at once.
func (g *guard) failWrite(err error) error {
	g.mu.Lock()
	if g.writeErr == nil {
		g.writeErr = err
	}
	first := g.writeErr
	g.mu.Unlock()
	if !g.broken.Swap(true) {
		_ = g.Close()
	}
	return first
}

// failedWrite is the error every write after a failed one returns.
func (g *guard) failedWrite() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writeErr
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

// state reports how the streams ended, for the close reason.
func (g *guard) state() (readErr, writeErr error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readErr, g.writeErr
}
