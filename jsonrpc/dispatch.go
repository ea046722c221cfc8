package jsonrpc

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"
)

// Dispatch: how an incoming call runs.
//
// The library hands each request to the handler on its reading goroutine.
// Running the call there would stall every other message behind it (and
// deadlock a call that waits for the peer); releasing the reader with Async
// for every call costs a fresh goroutine per call, whose stack grows by
// copying through decoding and the handler, plus a scheduler wakeup, which
// cost more than a short handler itself.
//
// So a call runs on a worker whose stack is already grown, and the reader
// waits for it, up to a short grace period. A call that answers within the
// grace period costs no release. A call that takes longer, or that calls the
// peer back (whose answer this reader must read), releases the reader, which
// then goes on reading while the call finishes. Any handler may block: the
// worst it costs other messages is the grace period.

// defaultGrace is how long the reader waits for a call before releasing
// itself.
const defaultGrace = 50 * time.Microsecond

// smallFrame is the library's read buffer. A message that fits is borrowed
// from that buffer and rewritten by the next read, so a call copies its
// params; a longer one was assembled in a buffer of its own that nothing
// rewrites, so its params are used as they are (an artifact chunk is not
// copied again).
const smallFrame = 4096

// graceTimers are the readers' grace-period timers, reused: a stopped timer
// delivers nothing stale after Stop or Reset, so one can serve call after
// call without a new one per call.
var graceTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// workerIdle is how long a worker waits for another call before it exits.
const workerIdle = 30 * time.Second

// job is one call handed to a worker, and its handler's context. Its method
// and params are copies: the library's own are borrowed from the read buffer
// and rewritten when the request is released.
//
// Being the context itself spares every call a context.WithCancel and two
// context.WithValue: the cancellation channel is made only when a handler
// asks for Done, and the values this package hands out (the job, the
// connection) are answered here.
type job struct {
	conn   *Conn
	parent context.Context // the connection's context, never the library's
	id     jsonrpc2.ID

	method  string
	params  jsontext.Value
	done    chan jobResult
	release chan struct{}

	mu        sync.Mutex
	real      context.Context // made on the first Done
	stop      context.CancelFunc
	cancelled bool // $/cancel came, or the call ended
}

// Deadline implements context.Context.
func (j *job) Deadline() (time.Time, bool) { return j.parent.Deadline() }

// Done implements context.Context. The channel is made on first use, by a
// context.WithCancel of the connection's context, already cancelled when a
// $/cancel came first.
func (j *job) Done() <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.real == nil {
		j.real, j.stop = context.WithCancel(j.parent)
		if j.cancelled {
			j.stop()
		}
	}
	return j.real.Done()
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

type jobResult struct {
	result any
	err    error
}

type jobKey struct{}

// releaseReader asks the reader waiting on the call ctx serves to go on
// reading: the call is about to wait for the peer, whose answer only the
// reader can deliver. Outside a call it does nothing.
func releaseReader(ctx context.Context) {
	if j, ok := ctx.Value(jobKey{}).(*job); ok {
		select {
		case j.release <- struct{}{}:
		default:
		}
	}
}

// dispatch runs one call on a worker while the reader (this goroutine)
// waits, releasing itself when the call takes longer than the grace period
// or asks for it. The grace grows by a microsecond per KiB of params: a
// large message takes that long to decode, and releasing would copy it.
func (c *Conn) dispatch(readerCtx context.Context, req *jsonrpc2.Request) (any, error) {
	params := req.Params()
	if len(params) <= smallFrame {
		params = bytes.Clone(params)
	}
	j := c.admitted
	c.admitted = nil
	j.method = strings.Clone(req.Method())
	j.params = jsontext.Value(params)
	j.done = make(chan jobResult, 1)
	j.release = make(chan struct{}, 1)
	select {
	case c.jobs <- j:
	default:
		go c.worker(j)
	}
	timer := graceTimers.Get().(*time.Timer)
	timer.Reset(c.grace + time.Duration(len(params)/1024)*time.Microsecond)
	select {
	case r := <-j.done:
		timer.Stop()
		graceTimers.Put(timer)
		return r.result, r.err
	case <-j.release:
	case <-timer.C:
	}
	timer.Stop()
	graceTimers.Put(timer)
	jsonrpc2.Async(readerCtx)
	r := <-j.done
	return r.result, r.err
}

// worker serves jobs until it has been idle for a while. Its answer is
// encoded here, so the deep work of marshaling stays on this warm stack.
func (c *Conn) worker(j *job) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		result, err := c.serve(c.ctx, j.method, true, j.params, j)
		if err == nil && result != nil {
			result, err = c.encodeAnswer(j, result)
		}
		j.done <- jobResult{result, err}
		idle.Reset(workerIdle)
		select {
		case j = <-c.jobs:
		case <-idle.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// encodeAnswer marshals a call's result once, here, and refuses an answer
// whose line would pass the message bound: the caller gets too_large for
// its id instead, and the connection stays up.
func (c *Conn) encodeAnswer(j *job, result any) (any, error) {
	raw, err := json.Marshal(result)
	if err != nil {
		c.opts.Logger.Error("answer cannot be encoded", "method", j.method, "err", err)
		return nil, internalError
	}
	if err := c.fits(j.method, "answer", answerLen(j.id, raw), raw); err != nil {
		c.opts.Logger.Warn("answer over the message bound refused", "peer", c.opts.Peer, "method", j.method, "bytes", len(raw))
		w, _ := toWire(err)
		return nil, w
	}
	return jsonrpc2.RawMessage(raw), nil
}
