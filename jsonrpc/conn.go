package jsonrpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// Options configures a Conn. The zero value of each field means its default.
type Options struct {
	// Peer names the other side in errors and logs ("extension notes").
	Peer string
	// Handlers serves incoming requests. Nil answers every request
	// method_not_found.
	Handlers *Table
	// Gate runs before the handler of every incoming call, after the
	// in-flight bound. A non-nil error refuses the call with that error
	// (not_initialized, undeclared, reentrant_call, shutting_down …).
	Gate func(ctx context.Context, method string) error
	// MaxInflight bounds the calls served at once (default protocol.MaxInflight).
	MaxInflight int
	// MaxMessageBytes bounds one line, both ways (default
	// protocol.MaxMessageBytes): a longer incoming line ends the connection,
	// and a longer outgoing message is refused too_large before it is
	// written.
	MaxMessageBytes int
	// WriteTimeout bounds the write of one frame when the writer supports
	// deadlines (default 30 s; negative disables it). A frame not taken
	// whole by then ends the connection.
	WriteTimeout time.Duration
	// CallTimeout bounds every outgoing call whose context has no deadline
	// (default none).
	CallTimeout time.Duration
	// Logger receives protocol errors and handler panics (default: discard).
	Logger *slog.Logger
	// Observer, when set, sees every line read and written (a wire tap).
	Observer Observer
	// CallerReads lets a call made while no other waits read its own answer
	// rather than be handed it by the reading goroutine, which saves a
	// goroutine wake-up (and, with idle cores, a thread's) per round trip.
	// The cost: a line the peer sends unasked while no call is in flight
	// may wait about a millisecond to be read. It needs a reader whose reads
	// a deadline interrupts (a pipe or socket the runtime polls); with any
	// other it does nothing. The host's sessions set it; an extension,
	// which mostly answers, does not.
	CallerReads bool

	// coalesceWait overrides coalesceWait, for tests (negative: zero).
	coalesceWait time.Duration
	// grace overrides defaultGrace, for tests that must not see a call
	// released by its timer.
	grace time.Duration
	// keepIdle overrides keepIdle, for tests that must find the reader role
	// free after a pause.
	keepIdle time.Duration
	// noCombine makes a line written while another write is in progress
	// wait for it and go in a write of its own, for tests.
	noCombine bool
}

const (
	defaultWriteTimeout = 30 * time.Second
	// closeWait bounds how long Close waits for handlers that ignore their
	// cancelled context.
	closeWait = 5 * time.Second
)

// Conn is one side of a symmetric JSON-RPC 2.0 connection over a pair of
// byte streams, one JSON object per line. Either side calls the other while
// serving: a handler on the reader reads the answers to its own calls, and a
// call that waits for the peer otherwise releases the reader, so a reader
// always delivers the answers nested callbacks wait for.
type Conn struct {
	opts  Options
	guard *guard
	wire  *wire
	out   outgoing

	ctx    context.Context
	cancel context.CancelFunc

	// The write queue (loop.go). queueMu frames lines (the guard's framing
	// shares a buffer) and guards the fields after it; it is never held
	// across a write.
	queueMu      sync.Mutex
	writing      bool         // a goroutine is writing and drains the queue
	pending      []byte       // framed lines waiting for the next write
	sendBuf      []byte       // pending's other buffer, while it is written
	taken, sent  uint64       // batches of pending taken for a write, and written (or failed)
	wrote        sync.Cond    // broadcast when a batch is written; L is &queueMu
	hasPending   atomic.Bool  // pending is not empty
	pendingSince atomic.Int64 // when the first line pending was queued, since epoch

	inflight atomic.Int32
	active   atomic.Int32  // requests being served, calls and notifications
	idle     chan struct{} // signalled when the last one ends while closing
	spare    chan struct{} // the reader role, handed to the parked spare (buffered: one)
	parked   atomic.Int32  // spareNone, spareParked or spareHanded
	// readersStarted counts the reading goroutines started for a release
	// that found no spare parked.
	readersStarted atomic.Int64
	calls          calls
	grace          time.Duration
	graceTimer     *time.Timer // releases the call holding the reader too long
	graceArmed     atomic.Bool
	graceBusy      atomic.Bool // a call was dispatched since the timer last fired
	running        atomic.Pointer[job]
	epoch          time.Time // the monotonic origin of calls' start times

	// The free reader role (ownread.go).
	roleFree   atomic.Bool   // nobody reads: a call registered now takes the role
	roleGen    atomic.Uint64 // counts the calls that took the free role
	roleBack   chan struct{} // a caller hands the role to the keeper (buffered: one)
	keeperIn   atomic.Bool   // a goroutine waits as the keeper
	ownReading atomic.Int32  // callers reading their own answers (one at most), for the expiry's kick

	closing   atomic.Bool
	closeOnce sync.Once
	endOnce   sync.Once // ended runs once: a reader started after the end ends too
	done      chan struct{}
	reason    atomic.Pointer[string]
}

type connKey struct{}

// FromContext returns the connection serving the request ctx belongs to, so
// a handler can call the peer back.
func FromContext(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// New starts a connection that reads r and writes w. Closing the Conn
// closes both when they are io.Closers.
func New(r io.Reader, w io.Writer, opts Options) *Conn {
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = protocol.MaxInflight
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = protocol.MaxMessageBytes
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Peer == "" {
		opts.Peer = "peer"
	}
	if opts.Handlers == nil {
		opts.Handlers = NewTable()
	}
	opts.keepIdle = cmp.Or(opts.keepIdle, keepIdle)
	switch {
	case opts.coalesceWait == 0:
		opts.coalesceWait = coalesceWait
	case opts.coalesceWait < 0:
		opts.coalesceWait = 0
	}
	c := &Conn{opts: opts, done: make(chan struct{}), grace: cmp.Or(opts.grace, defaultGrace), epoch: time.Now(),
		idle: make(chan struct{}, 1), spare: make(chan struct{}, 1), roleBack: make(chan struct{}, 1)}
	c.wrote.L = &c.queueMu
	c.graceTimer = time.AfterFunc(time.Hour, c.graceExpired)
	c.graceTimer.Stop()
	if opts.CallTimeout > 0 {
		c.out.expiry = time.AfterFunc(time.Hour, c.expireCalls)
		c.out.expiry.Stop()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.guard = newGuard(r, w, opts.MaxMessageBytes, opts.WriteTimeout)
	c.guard.observer = opts.Observer
	c.wire = newWire(c)
	c.guard.beforeRead = c.flush
	go c.reader()
	return c
}

func overloaded(limit int) error {
	w, _ := toWire(protocol.Errorf(protocol.ErrOverloaded,
		"already serving %d requests; retry with backoff", limit))
	return w
}

// calls tracks the incoming calls being served, by id, for $/cancel. A
// number id (every Go peer's) is kept in a map keyed by the number, whose
// hashing and lookups cost a fraction of the id struct's; a string id in
// one keyed by the string.
type calls struct {
	mu   sync.Mutex
	nums map[int64]*job
	strs map[string]*job
}

// add registers a call about to be served and returns its job, which is
// also the handler's context.
func (cs *calls) add(c *Conn, id jsonrpc2.ID) *job {
	j := &job{conn: c, parent: c.ctx, id: id}
	cs.mu.Lock()
	if n, ok := id.Number(); ok {
		if cs.nums == nil {
			cs.nums = make(map[int64]*job)
		}
		cs.nums[n] = j
	} else {
		str, _ := id.StringValue()
		if cs.strs == nil {
			cs.strs = make(map[string]*job)
		}
		cs.strs[str] = j
	}
	cs.mu.Unlock()
	return j
}

// remove forgets a call that has been served and ends its context.
func (cs *calls) remove(j *job) {
	cs.mu.Lock()
	if n, ok := j.id.Number(); ok {
		if cs.nums[n] == j {
			delete(cs.nums, n)
		}
	} else if str, _ := j.id.StringValue(); cs.strs[str] == j {
		delete(cs.strs, str)
	}
	cs.mu.Unlock()
	j.cancel()
}

func (cs *calls) cancel(id jsonrpc2.ID) {
	cs.mu.Lock()
	var j *job
	if n, ok := id.Number(); ok {
		j = cs.nums[n]
	} else {
		str, _ := id.StringValue()
		j = cs.strs[str]
	}
	cs.mu.Unlock()
	if j != nil {
		j.cancel()
	}
}

// cancelID reads the id of a $/cancel notification.
func cancelID(params []byte) (jsonrpc2.ID, bool) {
	var p protocol.CancelParams
	if err := json.Unmarshal(params, &p); err != nil || len(p.ID) == 0 {
		return jsonrpc2.ID{}, false
	}
	switch p.ID.Kind() {
	case '0':
		n, err := strconv.ParseInt(string(p.ID), 10, 64)
		if err != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewNumberID(n), true
	case '"':
		var s string
		if err := json.Unmarshal(p.ID, &s); err != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewStringID(s), true
	}
	return jsonrpc2.ID{}, false
}

// serve runs one released request: gate, handler, panic recovery, and the
// mapping of its outcome onto the wire.
func (c *Conn) serve(ctx context.Context, method string, isCall bool, params jsontext.Value, j *job) (result any, err error) {
	if isCall {
		defer c.inflight.Add(-1)
		defer c.calls.remove(j)
		ctx = j
	} else {
		ctx = context.WithValue(ctx, connKey{}, c)
	}
	defer func() {
		if r := recover(); r != nil {
			c.opts.Logger.Error("handler panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			result, err = nil, internalError
		}
	}()
	if !isCall {
		// Notifications have no answer, so an error from one is only
		// logged.
		if h, ok := c.opts.Handlers.Lookup(method); ok {
			if _, herr := h(ctx, params); herr != nil {
				c.opts.Logger.Warn("notification failed", "method", method, "err", herr)
			}
		}
		return nil, nil
	}
	if c.opts.Gate != nil {
		if gerr := c.opts.Gate(ctx, method); gerr != nil {
			return nil, c.answerError(method, gerr)
		}
	}
	h, ok := c.opts.Handlers.Lookup(method)
	if !ok {
		return nil, c.answerError(method, protocol.Errorf(protocol.ErrMethodNotFound, "method %q not found", method))
	}
	result, err = h(ctx, params)
	if ctx.Err() != nil {
		return nil, c.answerError(method, protocol.Errorf(protocol.ErrCancelled, "%s: cancelled", method))
	}
	if err != nil {
		return nil, c.answerError(method, err)
	}
	return result, nil
}

// answerError maps a handler error onto the wire, keeping the detail of an
// unauthored one in this side's log.
func (c *Conn) answerError(method string, err error) error {
	w, unauthored := toWire(err)
	if unauthored {
		c.opts.Logger.Error("request failed", "method", method, "err", err)
	}
	return w
}

// ended runs once reading has ended, for whatever reason (the peer closed
// its side, a protocol break, this side's Close), on the goroutine that
// held the reader role: it records why, fails the calls still waiting,
// cancels the handlers still running and closes Done. Every end of a
// connection ends its reading, so no goroutine of its own watches for it.
// A reader a late release started after the end ends at once and comes
// here too; only the first does anything.
func (c *Conn) ended() { c.endOnce.Do(c.end) }

// end is ended's body.
func (c *Conn) end() {
	c.graceTimer.Stop()
	reason := c.closeReason()
	c.reason.Store(&reason)
	c.cancel()
	ended := errors.New(reason)
	c.out.end(func(method string) error { return c.transportError(method, ended) }, ended)
	if !c.closing.Load() {
		readErr, _ := c.guard.state()
		if errors.Is(readErr, io.EOF) {
			// The peer closing its side is how an extension is told to
			// stop, and how a host learns it exited; the session reports
			// the crash with its exit status.
			c.opts.Logger.Debug("connection ended", "peer", c.opts.Peer, "reason", reason)
		} else {
			c.opts.Logger.Warn("connection ended", "peer", c.opts.Peer, "reason", reason)
		}
	}
	// The streams close now, so the peer sees EOF too (a connection that
	// died on a bad line would otherwise stay open until its owner closes
	// it). Here rather than on a goroutine of its own, which raced the
	// owner's Close and made it wait: a thread woken on every extension's
	// exit. The owner's Close still waits for the handlers.
	_ = c.guard.Close()
	close(c.done)
}

// protocolBreak reports whether err is the peer breaking the protocol (a
// line that is not JSON-RPC, one over the bound), rather than the stream
// ending.
func protocolBreak(err error) bool {
	return errors.As(err, new(*badLine)) || errors.Is(err, ErrMessageTooLarge) ||
		errors.Is(err, jsonrpc2.ErrParse) || errors.Is(err, jsonrpc2.ErrInvalidRequest)
}

// closeReason says why the connection ended, or "" while it is open.
func (c *Conn) closeReason() string {
	if p := c.reason.Load(); p != nil {
		return *p
	}
	readErr, writeErr := c.guard.state()
	// A line the wire refused ends the connection by closing its streams,
	// so the streams' own errors then say only "closed": a protocol break
	// the wire saw is the cause, and is asked first.
	wireErr := c.wire.stopReason()
	switch {
	case errors.Is(writeErr, errWriteBlocked), errors.Is(writeErr, ErrMessageTooLarge):
		return describe(writeErr)
	case protocolBreak(wireErr):
		return describe(wireErr)
	case c.closing.Load() && !errors.Is(readErr, ErrMessageTooLarge):
		return "the connection was closed by this side"
	case writeErr != nil:
		return describe(writeErr)
	case readErr != nil:
		return describe(readErr)
	case wireErr != nil:
		return describe(wireErr)
	}
	return ""
}

// Done is closed as soon as the connection ends: the peer closed its side
// (exited, crashed), broke the protocol, or Close was called.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended: nil while it is open or after Close,
// otherwise protocol.ErrTransport with the reason. The reason is recorded
// before any waiting call is failed, so a caller whose call failed for the
// connection's end always finds it here.
func (c *Conn) Err() error {
	p := c.reason.Load()
	if p == nil || *p == "the connection was closed by this side" {
		return nil
	}
	return protocol.Errorf(protocol.ErrTransport, "connection to %s ended: %s", c.opts.Peer, *p)
}

// Stalled reports whether the connection ended because the peer stopped
// reading: a line was not taken within the write deadline.
func (c *Conn) Stalled() bool {
	_, writeErr := c.guard.state()
	return errors.Is(writeErr, errWriteBlocked)
}

// CloseWrite closes only the writing direction: the peer reads EOF (the
// signal an extension exits on) while this side still reads.
func (c *Conn) CloseWrite() error { return c.guard.closeWrite() }

// Close ends the connection: handlers' contexts are cancelled, both streams
// are closed, and Close waits (boundedly) for running handlers to return.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.cancel()
		err = c.guard.Close()
		if !c.waitHandlers() {
			c.opts.Logger.Warn("handlers still running after close", "peer", c.opts.Peer)
		}
	})
	return err
}

// waitHandlers waits, at most closeWait, for the requests being served to
// end, and reports whether they did.
func (c *Conn) waitHandlers() bool {
	deadline := time.NewTimer(closeWait)
	defer deadline.Stop()
	for c.active.Load() > 0 {
		select {
		case <-c.idle:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// Inflight reports how many incoming calls are being served now.
func (c *Conn) Inflight() int { return int(c.inflight.Load()) }

// Peer names the other side.
func (c *Conn) Peer() string { return c.opts.Peer }
