package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrMessageTooLarge is the protocol error of a line longer than the bound.
var ErrMessageTooLarge = errors.New("message larger than the size bound")

// errWriteBlocked is the failure of a write the peer did not take in time.
var errWriteBlocked = errors.New("the peer is not reading its input")

// readBufferSize is the line reader's buffer: how much one read syscall may
// take from the pipe, and the longest line read without an allocation. A
// longer line is assembled in a buffer of its own, which it keeps. 512 KiB
// holds an artifact chunk's line (256 KiB of data is about 350 KB of base64
// and JSON), which at 256 KiB was assembled in a new, cleared buffer every
// time: 16 MiB in 256 KiB chunks moved 8% faster (session Artifact256K,
// 142 → 157 MB/s, medians of three interleaved runs), at 256 KiB more per
// connection and no measurable cost to a start.
const readBufferSize = 512 << 10

// readBufferStart is the buffer a connection starts with. Most never see
// a line longer than this (requests, answers, Events); the first that
// does gives the connection a readBufferSize buffer for good. Allocating
// the full size up front was about 30 µs of a new extension process's
// start (a large span, in a heap that had to grow for it), on the way to
// its first answer.
const readBufferStart = 64 << 10

// deadliner is a writer whose blocked writes can be bounded (a pollable
// *os.File, a net.Conn).
type deadliner interface {
	SetWriteDeadline(t time.Time) error
}

// guard sits under the connection loop, on the bytes. Reading, it is the
// line reader: it finds each newline with one bytes.IndexByte over the bytes
// read, enforces the message bound and hands the line up without copying
// it. Writing, it keeps every frame one line: a raw
// newline inside a frame can only be JSON whitespace, so it becomes a space,
// and U+2028/U+2029 (legal raw only inside JSON strings) become their
// escapes, so line readers in other languages never split a message.
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
	rdl    readDeadliner   // the reader's deadline, which interrupts a call reading its own answer; nil: none
	raw    syscall.RawConn // the writer's descriptor, when it is non-blocking
	rawR   syscall.RawConn // the reader's descriptor, when the runtime polls it

	maxLine      int
	writeTimeout time.Duration

	// Read side: touched only by the goroutine holding the reader role.
	buf     []byte // buf[start:end] is read and not yet handed up
	start   int
	end     int
	scanned int    // bytes from start already searched for a newline
	spare   []byte // the default buffer while a long line has a larger one
	owned   bool   // the last line has a buffer of its own, which nothing reuses
	// beforeRead runs before each read of the stream, which may block: the
	// connection writes the answers it held back for the lines already read.
	beforeRead func()
	rawRead    func(fd uintptr) bool // reads into rawInto once, made once
	rawInto    []byte
	rawGot     int
	// lastStart is where the last line began in buf, so a caller reading its
	// own answer can leave a request to the reading goroutine (unread); -1
	// when it cannot be (the line kept a buffer of its own).
	lastStart int
	replay    bool // the next line is one unread, seen by the observer already
	replayed  bool // the last line was one unread

	mu       sync.Mutex
	readErr  error // the first read error, kept for the close reason
	writeErr error // the first failed write; the streams are closed after it

	// Write side: frame runs under the connection's queue mutex (its
	// scratch buffer is shared), send on the one goroutine writing.
	rawWrite func(fd uintptr) bool // writes rawFrame once, made once
	rawFrame []byte
	rawTaken int
	scratch  []byte
	broken   atomic.Bool // a write failed: nothing more is written
	observer Observer    // sees each frame before it is written; nil: none

	// streamsOnce closes the streams once, whoever asks first (the end of
	// the connection, or Close); streamsErr is what closing them returned.
	streamsOnce sync.Once
	streamsErr  error
}

func newGuard(r io.Reader, w io.Writer, maxLine int, writeTimeout time.Duration) *guard {
	g := &guard{
		r:            r,
		w:            w,
		maxLine:      maxLine,
		writeTimeout: writeTimeout,
		buf:          make([]byte, readBufferStart),
		lastStart:    -1,
	}
	// Two files (an extension's stdio) are taken as what they are. Asking a
	// file for each interface instead makes the runtime build each pairing's
	// method table on the spot, which on the way to an extension's first
	// answer cost about 50 µs of its start.
	rf, rok := r.(*os.File)
	wf, wok := w.(*os.File)
	if rok && wok {
		g.closeR, g.closeW, g.wdl = rf, wf, wf
		g.raw, g.rawR = rawConn(wf, wf.SetWriteDeadline), rawConn(rf, rf.SetReadDeadline)
		if g.rawR != nil {
			g.rdl = rf
		}
	} else {
		g.closeR, _ = r.(io.Closer)
		g.closeW, _ = w.(io.Closer)
		g.wdl, _ = w.(deadliner)
		g.raw = rawWriter(w)
		g.rawR = rawReader(r)
		if g.rawR != nil {
			g.rdl, _ = r.(readDeadliner)
		}
	}
	g.rawRead = func(fd uintptr) bool {
		var done bool
		g.rawGot, done = readOnce(fd, g.rawInto)
		return done
	}
	g.rawWrite = func(fd uintptr) bool {
		g.rawTaken = writeOnce(fd, g.rawFrame)
		return true
	}
	return g
}

// readFrame returns the next line without its newline, valid until the next
// read unless owned says it has a buffer of its own. A clean end of the
// stream between lines is io.EOF; one inside a line io.ErrUnexpectedEOF; a
// line over the bound is ErrMessageTooLarge, and reading ends.
func (g *guard) readFrame(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for {
		if i := bytes.IndexByte(g.buf[g.start+g.scanned:g.end], '\n'); i >= 0 {
			lineEnd := g.start + g.scanned + i
			if lineEnd-g.start > g.maxLine {
				return nil, g.failRead(fmt.Errorf("%w: a line of %d bytes, over the %d-byte bound", ErrMessageTooLarge, lineEnd-g.start, g.maxLine))
			}
			line := g.buf[g.start:lineEnd]
			g.lastStart = g.start
			g.replayed, g.replay = g.replay, false
			g.start, g.scanned, g.owned = lineEnd+1, 0, false
			if g.spare != nil && g.end-g.start <= len(g.spare) {
				// A long line keeps the buffer it was assembled in; what
				// follows it goes back to the default buffer. When more
				// follows than that buffer holds (one read of a socket can
				// bring a lot), the reader stays in the large buffer and
				// the line is only valid until the next read.
				g.end = copy(g.spare, g.buf[g.start:g.end])
				g.buf, g.spare, g.start, g.owned = g.spare, nil, 0, true
				g.lastStart = -1
			}
			return line, nil
		}
		g.scanned = g.end - g.start
		if g.scanned > g.maxLine {
			return nil, g.failRead(fmt.Errorf("%w: a line passed %d bytes without ending", ErrMessageTooLarge, g.maxLine))
		}
		if g.beforeRead != nil {
			g.beforeRead()
		}
		g.makeRoom()
		n, err := g.read(g.buf[g.end:])
		g.end += n
		if n > 0 {
			continue
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A kick (ownread.go), not the stream's end: nothing was read,
			// and reading goes on.
			return nil, errKicked
		}
		g.endRead(err)
		if errors.Is(err, io.EOF) && g.end > g.start {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// read reads what the stream has into p, waiting for something. A stream
// the runtime polls is read with the system call made directly, waiting in
// the poller as the reader's own Read would; the end of the stream, an
// error, or a descriptor that cannot be had goes through the reader's Read,
// so the reader (the session's pipe, which notes its end) sees them.
func (g *guard) read(p []byte) (int, error) {
	if g.rawR != nil {
		g.rawInto = p
		err := g.rawR.Read(g.rawRead)
		n := g.rawGot
		g.rawInto, g.rawGot = nil, 0
		if err == nil && n > 0 {
			return n, nil
		}
	}
	return g.r.Read(p)
}

// makeRoom makes space after the unread bytes: it moves them to the front
// of the buffer, or, when they fill it, moves them to a buffer twice as
// large (never more than a line at the bound needs).
func (g *guard) makeRoom() {
	if g.end < len(g.buf) {
		return
	}
	pending := g.end - g.start
	if pending < len(g.buf) {
		copy(g.buf, g.buf[g.start:g.end])
		g.start, g.end = 0, pending
		return
	}
	if len(g.buf) < readBufferSize && g.spare == nil {
		bigger := make([]byte, readBufferSize)
		copy(bigger, g.buf[g.start:g.end])
		g.buf, g.start, g.end = bigger, 0, pending
		return
	}
	size := min(2*len(g.buf), g.maxLine+2)
	size = max(size, pending+1)
	bigger := make([]byte, size)
	copy(bigger, g.buf[g.start:g.end])
	if g.spare == nil {
		g.spare = g.buf
	}
	g.buf, g.start, g.end = bigger, 0, pending
}

// unread puts the line readFrame returned last back, so the next readFrame
// returns it again (marked replayed, for the observer), and reports whether
// it could: not when that line kept a buffer of its own.
func (g *guard) unread() bool {
	if g.lastStart < 0 {
		return false
	}
	g.start, g.scanned, g.lastStart, g.replay = g.lastStart, 0, -1, true
	return true
}

// readDeadliner is a reader whose reads can be bounded, as a file the
// runtime polls can be: a deadline also interrupts a read blocked already.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// syscallConner is a reader or writer that lends its descriptor: an
// *os.File, a net.Conn, or a wrapper around one that forwards the method
// (the session's pipes to an extension do).
type syscallConner interface {
	SyscallConn() (syscall.RawConn, error)
}

// errKicked is what readFrame returns when a kick interrupted its read.
var errKicked = errors.New("jsonrpc: read interrupted")

// kick interrupts the read in progress, or the next one, with errKicked.
func (g *guard) kick() { _ = g.rdl.SetReadDeadline(time.Unix(1, 0)) }

// unkick lets reads wait again after a kick.
func (g *guard) unkick() { _ = g.rdl.SetReadDeadline(time.Time{}) }

// failRead ends reading on a protocol error.
func (g *guard) failRead(err error) error {
	g.endRead(err)
	return err
}

// endRead records why reading ended: the first reason stands.
func (g *guard) endRead(err error) {
	g.mu.Lock()
	if g.readErr == nil {
		g.readErr = err
	}
	g.mu.Unlock()
}

// Write implements io.Writer. The connection hands it exactly one frame,
// ending in its newline, per call.
func (g *guard) Write(p []byte) (int, error) {
	frame, err := g.frame(p)
	if err != nil {
		return 0, err
	}
	if n, err := g.send(frame); err != nil {
		return min(n, len(p)), err
	}
	return len(p), nil
}

// frame readies one frame, ending in its newline, for the wire: kept one
// line, held to the bound, and shown to the observer. The frame returned is
// p itself when it needed no change, and valid until the next call
// otherwise.
func (g *guard) frame(p []byte) ([]byte, error) {
	if g.broken.Load() {
		return nil, g.failedWrite()
	}
	frame := g.sanitize(p)
	if len(frame)-1 > g.maxLine {
		return nil, g.failWrite(fmt.Errorf("%w: this side refused to write a line of %d bytes, over the %d-byte bound",
			ErrMessageTooLarge, len(frame)-1, g.maxLine))
	}
	if g.observer != nil && len(frame) > 0 {
		g.observer.Observe(true, frame[:len(frame)-1])
	}
	return frame, nil
}

// send writes framed lines (one, or several back to back) whole, or ends
// the connection, and says how many bytes were taken.
func (g *guard) send(frames []byte) (int, error) {
	if g.broken.Load() {
		return 0, g.failedWrite()
	}
	taken := g.tryWrite(frames)
	if taken == len(frames) {
		return taken, nil
	}
	if g.wdl != nil && g.writeTimeout > 0 {
		_ = g.wdl.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	}
	n, err := g.w.Write(frames[taken:])
	n += taken
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("a write blocked for %s (%d of its %d bytes taken), so the connection was closed: %w",
				g.writeTimeout, n, len(frames), errWriteBlocked)
		}
		return n, g.failWrite(err)
	}
	return n, nil
}

// buffered reports whether bytes of a further line have been read already:
// its request can be served without a read, so an answer just made may wait
// for the answers after it. Only the reader asks.
func (g *guard) buffered() bool { return g.end > g.start }

// tryWrite offers the frame to a non-blocking pipe or socket once, with no
// deadline, and says how much of it was taken: a frame the pipe takes at
// once (nearly every one) costs no deadline, which is a timer. Anything else
// (a full pipe, an error, a writer with no raw descriptor) is left to the
// deadline-bounded write.
func (g *guard) tryWrite(frame []byte) int {
	if g.raw == nil || g.wdl == nil || g.writeTimeout <= 0 {
		return 0
	}
	g.rawFrame = frame
	_ = g.raw.Write(g.rawWrite)
	n := g.rawTaken
	g.rawFrame, g.rawTaken = nil, 0
	return n
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

// Close closes both directions, once: a later call returns what the first
// closing returned.
func (g *guard) Close() error {
	g.streamsOnce.Do(func() {
		var errs []error
		if g.closeW != nil {
			errs = append(errs, g.closeW.Close())
		}
		if g.closeR != nil && g.closeR != g.closeW {
			errs = append(errs, g.closeR.Close())
		}
		g.streamsErr = errors.Join(errs...)
	})
	return g.streamsErr
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
