package jsonrpc

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"
)

// Dispatch: how an incoming call runs.
//
// Running every call on the reading goroutine to its end would stall every
// other message behind it (and deadlock a call that waits for the peer);
// handing every call to a goroutine of its own costs a goroutine whose stack
// grows by copying through decoding and the handler, plus a scheduler
// wakeup; handing each call to a worker and waiting for it costs two
// goroutine switches per call, which cost more than a short handler itself.
//
// So a call runs on the reading goroutine, whose stack is already grown, for
// up to a short grace period. A call that answers within it costs no
// goroutine, no switch and no allocation of its own. A call that calls the
// peer back reads the answer itself with the role (ownread.go). A call that
// takes longer, that starts a call to the peer or notifies it (Start,
// Notify), or that asks for its context's Done, releases the reader: the reader role passes to the parked spare
// goroutine (loop.go), which goes on reading while the call finishes where
// it is. The grace period
// is one timer per connection, armed only when it is not already: arming a
// timer wakes the runtime's network poller (a thread woken, a syscall), and
// each firing runs on a goroutine of its own. When it fires it releases the
// call on the reader if that call's own grace period is over, and re-arms
// itself for the rest of it if not. While calls keep coming it stays armed,
// firing once per grace period whatever the call rate, and it goes unarmed
// only after a whole period with no call, so a steady stream of calls arms no
// timer per call. The grace period is a millisecond: long enough that
// sequential calls (one every 100 or 200 µs across a process) share a firing,
// short enough that a blocking handler holds up other messages for no longer
// than a pipe wakeup on a loaded machine. Any handler may block: the worst it
// costs other messages is the grace period.

// defaultGrace is how long a call may hold the reader before it is
// released.
const defaultGrace = time.Millisecond

// A call's params are borrowed from the line reader's buffer, rewritten by
// the next read, unless their line was long enough to get a buffer of its own
// (guard.readFrame); borrowed params are copied into the scratch buffer of
// the goroutine's lane, which stays with the call when it is released, and
// owned ones are used as they are (an artifact chunk is not copied again).

// A served call's state, for the race between its end and its release.
const (
	jobRunning  int32 = iota
	jobDone           // its handler returned on the reader
	jobReleased       // the reader role passed on; the call finishes where it is
	jobReading        // its handler is reading its own call's answer with the role (ownread.go)
)

// job is one call being served, and its handler's context. Its method is the
// handler table's own string and its params are owned (see dispatch): the
// line's are borrowed from the read buffer, rewritten once the reader is
// released.
//
// Being the context itself spares every call a context.WithCancel and two
// context.WithValue: the cancellation channel is made only when a handler
// asks for Done, and the values this package hands out (the job, the
// connection) are answered here.
type job struct {
	conn   *Conn
	parent context.Context // the connection's context
	id     jsonrpc2.ID

	method    string
	params    jsontext.Value
	answer    *bytes.Buffer // where the answer is encoded
	started   atomic.Int64  // when it began, or last resumed, on the reader: nanoseconds since the connection's epoch
	grace     time.Duration // how long it may hold the reader
	state     atomic.Int32  // jobRunning (or jobReading, and back), then jobDone or jobReleased
	releasing sync.Mutex    // held while the reader is being released

	mu        sync.Mutex
	real      context.Context // made on the first Done
	stop      context.CancelFunc
	cancelled bool // $/cancel came, or the call ended
}

// Deadline implements context.Context.
func (j *job) Deadline() (time.Time, bool) { return j.parent.Deadline() }

// Done implements context.Context. The channel is made on first use, by a
// context.WithCancel of the connection's context, already cancelled when a
// $/cancel came first. A handler on the reader that asks for it is about to
// wait (for its cancel, or for something else with it), so the reader is
// released then rather than when the grace period ends: a $/cancel for it,
// and every other line, is read meanwhile. (Deriving a context from the
// call's asks for it too.)
func (j *job) Done() <-chan struct{} {
	j.mu.Lock()
	if j.real == nil {
		j.real, j.stop = context.WithCancel(j.parent)
		if j.cancelled {
			j.stop()
		}
	}
	done := j.real.Done()
	j.mu.Unlock()
	if j.state.Load() == jobRunning {
		j.releaseReader()
	}
	return done
}

// Err implements context.Context.
func (j *job) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.real != nil:
		return j.real.Err()
	case j.cancelled:
		return context.Canceled
	}
	return j.parent.Err()
}

// Value implements context.Context. Once Done has made the real context,
// other keys go to it, so a context derived from this one finds its cancel
// directly instead of watching it from a goroutine of its own.
func (j *job) Value(key any) any {
	switch key.(type) {
	case jobKey:
		return j
	case connKey:
		return j.conn
	}
	j.mu.Lock()
	real := j.real
	j.mu.Unlock()
	if real != nil {
		return real.Value(key)
	}
	return j.parent.Value(key)
}

// cancel cancels the call's context: a $/cancel for it, or its end.
func (j *job) cancel() {
	j.mu.Lock()
	j.cancelled = true
	stop := j.stop
	j.mu.Unlock()
	if stop != nil {
		stop()
	}
}

type jobKey struct{}

// releaseReader asks the reader serving the call ctx belongs to to go on
// reading: the call is about to wait for the peer, whose answer only a reader
// can deliver. Outside a call, or once released, it does nothing.
func releaseReader(ctx context.Context) {
	if j, ok := ctx.Value(jobKey{}).(*job); ok {
		j.releaseReader()
	}
}

// releaseReader hands the reader role on while the call goes on here. It runs
// on the call's own goroutine (a callback) or on the grace timer's, at most
// once per call, and never after the call has ended. The call keeps its
// goroutine's lane, so nothing is copied.
func (j *job) releaseReader() {
	j.releasing.Lock()
	defer j.releasing.Unlock()
	if !j.state.CompareAndSwap(jobRunning, jobReleased) {
		return
	}
	// The answers held back for the lines after this one go now: this call
	// may hold its goroutine for long.
	j.conn.flush()
	j.conn.handOff()
}

// graceExpired runs when the grace timer fires. It releases the call on the
// reader if that call's grace period is over, and re-arms the timer for the
// rest of it if not; with no call on the reader it re-arms for a whole period
// if one was dispatched since the last firing, and stays unarmed if none was.
// It disarms first and looks at the running call after, so a call dispatch
// just started either armed the timer itself or is seen here.
func (c *Conn) graceExpired() {
	c.graceArmed.Store(false)
	busy := c.graceBusy.Swap(false)
	j := c.running.Load()
	if j == nil || j.state.Load() != jobRunning {
		if busy && c.graceArmed.CompareAndSwap(false, true) {
			c.graceTimer.Reset(c.grace)
		}
		return
	}
	if left := time.Duration(j.started.Load()) + j.grace - time.Since(c.epoch); left > 0 {
		if c.graceArmed.CompareAndSwap(false, true) {
			c.graceTimer.Reset(left)
		}
		return
	}
	j.releaseReader()
}

// dispatch runs one call on the reading goroutine, under the grace timer. The
// grace grows by a microsecond per KiB of params: a large message takes that
// long to decode.
func (c *Conn) dispatch(l *lane, j *job, params []byte) (any, error) {
	if !c.guard.owned && len(params) > 0 {
		l.scratch = append(l.scratch[:0], params...)
		params = l.scratch
	}
	j.params = jsontext.Value(params)
	if l.answer.Cap() > maxPooledFrame {
		l.answer = bytes.Buffer{}
	}
	j.answer = &l.answer
	j.grace = c.grace + time.Duration(len(params)/1024)*time.Microsecond
	now := time.Since(c.epoch)
	j.started.Store(int64(now))
	c.flushIfStale(now)
	c.running.Store(j)
	if !c.graceBusy.Load() {
		c.graceBusy.Store(true)
	}
	if c.graceArmed.CompareAndSwap(false, true) {
		c.graceTimer.Reset(j.grace)
	}
	result, err := c.serve(c.ctx, j.method, true, j.params, j)
	if err == nil && result != nil {
		result, err = c.encodeAnswer(j, result)
	}
	if j.state.CompareAndSwap(jobRunning, jobDone) {
		return result, err
	}
	// Released, perhaps by the timer still handing the reader role on: this
	// goroutine must not park as the spare before that hand-off is done, so
	// it waits for the lock the release holds.
	j.releasing.Lock()
	j.releasing.Unlock()
	return result, err
}

// encodeAnswer marshals a call's result once, into the call's answer buffer
// (a result that appends its own JSON, as protocol.OperationCallResult does,
// appends it there), and refuses an answer whose line would pass the message
// bound: the caller gets too_large for its id instead, and the connection
// stays up. The answer line is encoded from it (writeAnswer) before this
// goroutine reads again, so its lane's answer buffer is free again by the
// next call.
func (c *Conn) encodeAnswer(j *job, result any) (any, error) {
	j.answer.Reset()
	var err error
	if a, ok := appender(result); ok {
		var b []byte
		if b, err = a.AppendJSON(j.answer.AvailableBuffer()); err == nil {
			j.answer.Write(b)
		}
	} else {
		err = json.MarshalWrite(j.answer, result)
	}
	if err != nil {
		c.opts.Logger.Error("answer cannot be encoded", "method", j.method, "err", err)
		return nil, internalError
	}
	raw := j.answer.Bytes()
	if err := c.fits(j.method, "answer", answerLen(j.id, raw), raw); err != nil {
		c.opts.Logger.Warn("answer over the message bound refused", "peer", c.opts.Peer, "method", j.method, "bytes", len(raw))
		w, _ := toWire(err)
		return nil, w
	}
	return jsonrpc2.RawMessage(raw), nil
}
