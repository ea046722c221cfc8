package jsonrpc

import (
	"bytes"
	"context"
	"fmt"
	"time"

	json "github.com/go-json-experiment/json"
	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// The connection loop: this package reads, classifies, dispatches and
// answers every line itself, on the library's message types and scanner,
// instead of running the library's Conn. Its Conn cost each served call
// several microseconds that this side did not need: a pooled request set up
// and torn down, the in-flight state taken under one lock four times, each
// request line scanned again after this side had screened it, the answer
// boxed into a response and written through a second buffer, and every
// release cloning the params (which this side had already copied) and
// starting a reading goroutine of its own.
//
// Here one goroutine at a time holds the reader role. It reads a line with
// the guard (one IndexByte pass for the newline, the bound enforced),
// classifies it in one pass (scanRequestLine for the requests a Go peer
// writes, scanAnswerLine for its successful answers, the library's
// ScanMessageView for everything else), and then:
//
//   - a call is admitted under the in-flight bound (over it, answered
//     overloaded at once), registered for $/cancel, and dispatched right
//     there under the grace timer (dispatch.go); its answer is encoded once,
//     id and result or error, into the goroutine's own line buffer and
//     written whole;
//   - a notification hands the reader role on and runs where it is, except
//     $/cancel, which is applied at once, before anything read after it;
//   - an answer goes to the call waiting for it (calls.go), and anything
//     else gets what wire.go says.
//
// When a call releases the reader (it outlived its grace period, started a
// call to the peer, asked for its context's Done, or met a request while
// reading its own call's answer), the role passes to a spare goroutine
// parked for it, whose stack has already grown, and the releasing goroutine
// finishes its call and then parks as the spare in turn; a new goroutine is
// started only when no spare is parked. Each goroutine keeps its own
// buffers (its lane), so a release moves no buffer and copies nothing.

// Answers are coalesced: an answer made on the reader while the next line is
// already read (callers at once, whose requests arrive together) is held, and
// the answers held go out in one write when the lines read run out (before
// the reader reads again, which may wait), with any other line written
// meanwhile, when a call releases the reader, when they pass coalesceMax
// bytes, or when the first has waited coalesceWait by the start of the next
// call. No timer is waited for: an answer waits at most for the calls
// already read after it to be served, and none of those holds the reader
// past its grace period.
//
// Lines written at once are combined too (writeLine): a request, a
// notification or an answer written while another goroutine's write is in
// progress joins the lines pending, and that writer writes them all before
// it lets go. Held answers and queued lines are one queue, written together.

// coalesceMax bounds the answers held back for one write, and the lines
// queued behind a write in progress before a caller waits for its own.
const coalesceMax = 64 << 10

// coalesceWait is how long the first answer held back may wait for more
// before the next call is served.
const coalesceWait = 100 * time.Microsecond

// lane is the buffers one reading goroutine serves calls with. A call
// released from the reader keeps using its goroutine's lane; the goroutine
// taking the reader role over has a lane of its own.
type lane struct {
	scratch []byte       // small params, copied off the read buffer
	answer  bytes.Buffer // the result, as encodeAnswer writes it
	line    []byte       // the answer line as written
}

// laneStart is the room a lane's answer buffers start with: initialize's
// answer (the manifest) fits, where growing from empty went through every
// size class on the way, each a fresh page in a new process.
const laneStart = 4 << 10

func newLane() *lane {
	l := &lane{line: make([]byte, 0, laneStart)}
	l.answer.Grow(laneStart)
	return l
}

// reader holds the reader role until reading ends, parking as the spare
// between the calls it served whose release passed the role on, and as the
// keeper while it leaves the role free between calls (ownread.go). The one
// holding the role when reading ends ends the connection.
func (c *Conn) reader() {
	l := newLane()
	for {
		switch c.readLines(l, nil) {
		case endPassed:
			if !c.park() {
				return
			}
		case endFreed:
			if !c.keep() {
				return
			}
		default:
			c.ended()
			return
		}
	}
}

// The states of Conn.parked: whether a spare goroutine has committed to
// waiting for the reader role, and whether a release has handed it over.
const (
	spareNone   int32 = iota // no spare: a release starts a goroutine
	spareParked              // a spare is waiting, or about to
	spareHanded              // the role is in the spare channel, not yet taken
)

// handOff passes the reader role to the parked spare, or to a new goroutine
// when none is parked. It runs once per release, on the goroutine releasing.
// A spare counts as parked from the moment it commits to waiting, before it
// reaches its receive (a loaded machine can hold it there for a while), so
// the role goes through a channel of one that never makes the releaser wait.
func (c *Conn) handOff() {
	if c.parked.CompareAndSwap(spareParked, spareHanded) {
		c.spare <- struct{}{}
		return
	}
	c.readersStarted.Add(1)
	go c.reader()
}

// park waits as the spare for the reader role, and reports whether it got
// it. Only one goroutine parks; any other, and every one once the
// connection has ended, returns false and exits.
func (c *Conn) park() bool {
	if !c.parked.CompareAndSwap(spareNone, spareParked) {
		return false
	}
	select {
	case <-c.spare:
	case <-c.ctx.Done():
		// Withdrawn before a release handed the role over, it stays
		// with the releaser (which then starts a reader); handed over
		// already, it is this goroutine's to take, so that the reading,
		// which the end of the connection ends, always has a holder.
		if c.parked.CompareAndSwap(spareParked, spareNone) {
			return false
		}
		<-c.spare
	}
	c.parked.Store(spareNone)
	return true
}

// readEnd is why readLines returned.
type readEnd int

const (
	endRead   readEnd = iota // reading has ended
	endPassed                // a call or notification served here passed the role on (and has finished)
	endFreed                 // the role was left free between calls (ownread.go)
	endOwn                   // own's answer has been delivered
	endKicked                // own's read was interrupted (its context ended, or its deadline)
	endYield                 // own's reader met a request, left unread for a reading goroutine
)

// readLines reads and serves lines while this goroutine holds the reader
// role, and says why it stopped. own is the call of a caller reading its own
// answer (ownread.go), nil on a reading goroutine.
func (c *Conn) readLines(l *lane, own *waiter) readEnd {
	for {
		frame, err := c.guard.readFrame(c.ctx)
		if err == errKicked {
			c.guard.unkick()
			if own != nil {
				return endKicked
			}
			continue
		}
		if err != nil {
			c.flush()
			c.wire.stop(err)
			return endRead
		}
		if o := c.opts.Observer; o != nil && !c.guard.replayed {
			o.Observe(false, frame)
		}
		if r, ok := scanRequestLine(frame); ok {
			if c.leaveLine(own) {
				return endYield
			}
			if c.request(l, c.methodName(r.method), &r) {
				return endPassed
			}
			continue
		}
		var delivered *waiter
		if id, result, ok := scanAnswerLine(frame); ok {
			delivered = c.out.deliverResult(c, id, result)
		}
		if delivered == nil {
			v, err := jsonrpc2.ScanMessageView(frame)
			switch {
			case err == nil && (v.Kind == jsonrpc2.MessageViewCall || v.Kind == jsonrpc2.MessageViewNotification):
				if c.leaveLine(own) {
					return endYield
				}
				r, method, ok := c.viewRequest(&v)
				if !ok {
					c.flush()
					c.wire.stop(&badLine{err: jsonrpc2.ErrInvalidRequest, start: lineStart(frame)})
					return endRead
				}
				if c.request(l, method, &r) {
					return endPassed
				}
				continue
			case err == nil:
				delivered = c.out.deliver(c, &v)
			case isBatch(frame):
				if c.leaveLine(own) {
					return endYield
				}
				c.wire.refuse(l, fmt.Sprintf("a JSON-RPC batch (an array, %d bytes) is not accepted: this protocol takes one JSON object per line; send each request on its own line. Nothing in the batch was run", len(frame)))
				continue
			default:
				w, isAnswer := c.out.deliverMalformed(c, frame)
				if !isAnswer {
					if c.leaveLine(own) {
						return endYield
					}
					c.flush()
					c.wire.stop(&badLine{err: err, start: lineStart(frame)})
					return endRead
				}
				delivered = w
			}
		}
		switch {
		case delivered == nil:
		case delivered == own:
			return endOwn
		case own == nil && c.freeRole():
			return endFreed
		}
	}
}

// leaveLine puts the line just read back for a reading goroutine when a
// caller reading its own answer (own) met it, and reports whether it did: a
// caller takes answers only, so no handler, however long, holds a caller
// whose answer has come. A line too long to go back (one with a buffer of
// its own) is served where it was read.
func (c *Conn) leaveLine(own *waiter) bool { return own != nil && c.guard.unread() }

// viewRequest is a request the library's scanner read, as this loop serves
// it.
func (c *Conn) viewRequest(v *jsonrpc2.MessageView) (r request, method string, ok bool) {
	r.params = v.Params
	if v.Kind == jsonrpc2.MessageViewCall {
		if r.id, ok = v.ID.ID(); !ok {
			return r, "", false
		}
		r.isCall = true
	} else {
		r.nullID = v.IDRaw != nil
	}
	if !v.MethodEscaped {
		return r, c.methodName(v.MethodBytes), true
	}
	method, ok = v.MethodString()
	return r, method, ok
}

// methodName is the handler table's own string for a method it serves, and
// a copy of any other name: the bytes are the read buffer's.
func (c *Conn) methodName(b []byte) string {
	if name, ok := c.opts.Handlers.name(b); ok {
		return name
	}
	return string(b)
}

// request serves one request read on this goroutine and reports whether the
// reader role has passed on.
func (c *Conn) request(l *lane, method string, r *request) bool {
	switch {
	case r.nullID:
		c.wire.refuse(l, fmt.Sprintf("%.100s: a request's id must be a number or a string, never null, so its answer can name it; the request was not run", method))
		return false
	case !r.isCall && method == protocol.MethodCancel:
		if id, ok := cancelID(r.params); ok {
			c.calls.cancel(id)
		}
		return false
	case !r.isCall:
		// A notification runs off the reader: the role passes on first, so
		// its params are copied off the read buffer unless they own theirs.
		params := r.params
		if !c.guard.owned && len(params) > 0 {
			params = bytes.Clone(params)
		}
		c.active.Add(1)
		c.handOff()
		_, _ = c.serve(c.ctx, method, false, params, nil)
		c.handlerDone()
		return true
	}
	if int(c.inflight.Add(1)) > c.opts.MaxInflight {
		c.inflight.Add(-1)
		l.line = c.writeAnswer(l.line, c.guard.buffered(), r.id, nil, overloaded(c.opts.MaxInflight))
		return false
	}
	c.active.Add(1)
	j := c.calls.add(c, r.id)
	j.method = method
	result, err := c.dispatch(l, j, r.params)
	// Only a goroutine still holding the reader role may ask the guard.
	released := j.state.Load() == jobReleased
	l.line = c.writeAnswer(l.line, !released && c.guard.buffered(), j.id, result, err)
	c.handlerDone()
	return released
}

// writeAnswer encodes a call's whole answer line once into dst's array, the
// id and the result (as encodeAnswer left it) or the error, and writes it,
// or holds it back for the answers after it when hold is set (the reader
// has the next line already). It returns the buffer for reuse.
func (c *Conn) writeAnswer(dst []byte, hold bool, id jsonrpc2.ID, result any, err error) []byte {
	var raw jsonrpc2.RawMessage
	if err == nil {
		switch r := result.(type) {
		case nil:
		case jsonrpc2.RawMessage:
			raw = r
		default:
			if raw, err = json.Marshal(r); err != nil {
				c.opts.Logger.Error("answer cannot be encoded", "err", err)
				err = internalError
			}
		}
	}
	line := append(jsonrpc2.AppendResponse(dst[:0], id, raw, err), '\n')
	if hold {
		c.holdLine(line)
	} else {
		_ = c.writeLine(c.ctx, line)
	}
	if cap(line) > maxPooledFrame {
		return nil
	}
	return line
}

// writeLine writes one whole line, ending in its newline, or queues it
// behind the write in progress. A write whose context has ended is not made.
//
// Writes are combined: the goroutine that finds nobody writing becomes the
// writer, writes its line (after the lines pending, in the same write) and
// then everything queued meanwhile, batch by batch, before it lets go; a
// goroutine that finds a write in progress frames its line into the queue
// and returns at once. Nobody waits on a timer, and a line waits at most for
// the write in progress and then its own. A queued line that is never
// written (the write in progress blocked past the deadline and ended the
// connection) fails its call through the connection's end, as every call
// waiting for an answer does. A line queued while the queue is over
// coalesceMax waits for the write that takes it, so a writer faster than the
// peer reads is held back as a blocking write holds it.
func (c *Conn) writeLine(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.queueMu.Lock()
	if err := ctx.Err(); err != nil {
		c.queueMu.Unlock()
		return err
	}
	frame, err := c.guard.frame(line)
	if err != nil {
		c.queueMu.Unlock()
		return err
	}
	if c.writing {
		if !c.opts.noCombine {
			c.queue(frame)
			if len(c.pending) > coalesceMax {
				for batch := c.taken + 1; c.sent < batch; {
					c.wrote.Wait()
				}
			}
			c.queueMu.Unlock()
			return nil
		}
		frame = bytes.Clone(frame) // the guard's buffer is not kept while waiting
		for c.writing {
			c.wrote.Wait()
		}
	}
	c.writing = true
	// The caller's own line is written from its buffer when nothing is
	// pending (an artifact chunk is not copied); a line the guard rewrote is
	// in the guard's buffer, which the next line framed reuses.
	if len(c.pending) > 0 || &frame[0] != &line[0] {
		c.queue(frame)
		frame = nil
	}
	return c.drain(frame)
}

// queue appends a framed line to the lines pending, under queueMu.
func (c *Conn) queue(frame []byte) {
	if len(c.pending) == 0 {
		c.pendingSince.Store(int64(time.Since(c.epoch)))
		c.hasPending.Store(true)
	}
	c.pending = append(c.pending, frame...)
}

// drain is the writer's loop: it writes out (the caller's own line, or
// nothing) and then the lines pending, all those queued by then in one
// write, until none are left. It runs with queueMu held and writing set,
// and returns with queueMu released and writing cleared; its error is that
// of its first write, the one with the caller's line.
func (c *Conn) drain(out []byte) error {
	var err error
	first := true
	for {
		batch := out == nil
		if batch {
			if len(c.pending) == 0 {
				c.writing = false
				c.wrote.Broadcast()
				c.queueMu.Unlock()
				return err
			}
			out = c.pending
			c.pending, c.sendBuf = c.sendBuf[:0], nil
			c.hasPending.Store(false)
			c.taken++
		}
		c.queueMu.Unlock()
		_, werr := c.guard.send(out)
		if first {
			err, first = werr, false
		}
		c.queueMu.Lock()
		if batch {
			c.sent++
			c.wrote.Broadcast()
			if cap(out) <= maxPooledFrame {
				c.sendBuf = out[:0]
			}
		}
		out = nil
	}
}

// holdLine keeps an answer line back for the answers after it (the writer
// takes it with the lines queued when a write is in progress). Only the
// reader holds lines back.
func (c *Conn) holdLine(line []byte) {
	if c.ctx.Err() != nil {
		return
	}
	c.queueMu.Lock()
	frame, err := c.guard.frame(line)
	if err == nil {
		c.queue(frame)
	}
	if c.writing || len(c.pending) < coalesceMax {
		c.queueMu.Unlock()
		return
	}
	c.writing = true
	_ = c.drain(nil)
}

// flush writes the lines pending, if any, unless a write in progress will.
func (c *Conn) flush() {
	if !c.hasPending.Load() {
		return
	}
	c.queueMu.Lock()
	if c.writing || len(c.pending) == 0 {
		c.queueMu.Unlock()
		return
	}
	c.writing = true
	_ = c.drain(nil)
}

// flushIfStale writes the answers held back once the first has waited
// coalesceWait (Options.coalesceWait in tests); now is the time since the
// connection's epoch.
func (c *Conn) flushIfStale(now time.Duration) {
	if c.hasPending.Load() && now-time.Duration(c.pendingSince.Load()) >= c.opts.coalesceWait {
		c.flush()
	}
}

// handlerDone counts a served request's end, and tells a waiting Close when
// it was the last.
func (c *Conn) handlerDone() {
	if c.active.Add(-1) == 0 && c.closing.Load() {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}
