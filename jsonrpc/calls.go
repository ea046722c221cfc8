package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/go-json-experiment/json"
	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// Outgoing calls: this side numbers its requests 1, 2, 3… and keeps the
// ones it waits for by id. The reader delivers each answer to its call; an
// answer for an id nobody waits for is logged and dropped.

// directDecodeMax is the largest result the reader decodes itself, straight
// from the read buffer; a larger one is decoded by its caller (copied first
// unless its line has a buffer of its own), so a big answer never holds the
// reader up.
const directDecodeMax = 64 << 10

// abandonedKept is how many given-up calls are remembered, so their late
// answers are expected rather than reported.
const abandonedKept = 256

// outgoing is the calls in flight on one connection.
type outgoing struct {
	lastID atomic.Int64

	mu        sync.Mutex
	waiting   map[int64]*waiter
	ended     error // why the connection ended; set once
	abandoned [abandonedKept]int64
	nextSlot  int

	// expiry keeps CallTimeout for every call at once: one timer per
	// connection, armed for the oldest timed call and re-armed when it
	// fires, instead of a context.WithTimeout (a timer, and a wakeup of the
	// runtime's poller) per call. nil when there is no CallTimeout.
	expiry      *time.Timer
	expiryArmed bool // under mu

	strays atomic.Int64
}

// waiter is one call waiting for its answer.
type waiter struct {
	method string
	result any
	done   chan struct{}
	err    error
	raw    []byte // a result too large to decode on the reader
	// deadline is when CallTimeout ends the call, since the connection's
	// epoch; zero when its context bounds it (or nothing does).
	deadline time.Duration
}

var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan struct{}, 1)} }}

func getWaiter(method string, result any) *waiter {
	w := waiters.Get().(*waiter)
	w.method, w.result = method, result
	return w
}

func putWaiter(w *waiter) {
	*w = waiter{done: w.done}
	waiters.Put(w)
}

// add registers a call, unless the connection has ended, and arms the
// expiry timer for a timed call when it is not armed already: a later call's
// deadline is never earlier than the one it is armed for. When the reader
// role is free (ownread.go) it takes it: for the caller to read its own
// answer with when take is set and no other call waits (and says so),
// else for the keeper, which then reads for this call.
func (o *outgoing) add(id int64, w *waiter, now time.Duration, c *Conn, take bool) (took bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended != nil {
		return false, o.ended
	}
	if c.roleFree.Load() && c.roleFree.CompareAndSwap(true, false) {
		if take && len(o.waiting) == 0 {
			took = true
		} else {
			c.handBack()
		}
	}
	if o.waiting == nil {
		o.waiting = make(map[int64]*waiter)
	}
	o.waiting[id] = w
	if w.deadline > 0 && !o.expiryArmed {
		o.expiryArmed = true
		o.expiry.Reset(w.deadline - now)
	}
	return took, nil
}

// expired removes the timed calls whose deadline has passed, remembering
// their ids as abandoned, and re-arms the expiry timer for the earliest
// deadline left.
func (o *outgoing) expired(now time.Duration) map[int64]*waiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expiryArmed = false
	var out map[int64]*waiter
	var next time.Duration
	for id, w := range o.waiting {
		switch {
		case w.deadline == 0:
		case w.deadline <= now:
			if out == nil {
				out = make(map[int64]*waiter)
			}
			out[id] = w
			delete(o.waiting, id)
			o.remember(id)
		case next == 0 || w.deadline < next:
			next = w.deadline
		}
	}
	if next > 0 && o.ended == nil {
		o.expiryArmed = true
		o.expiry.Reset(next - now)
	}
	return out
}

// expireCalls runs when the expiry timer fires: each call past its
// CallTimeout fails with context.DeadlineExceeded, as its context would
// have, and the peer is sent $/cancel for it.
func (c *Conn) expireCalls() {
	expired := c.out.expired(time.Since(c.epoch))
	if len(expired) > 0 && c.ownReading.Load() > 0 {
		// A caller reading its own answer may be one of them.
		c.guard.kick()
	}
	for id, w := range expired {
		w.err = context.DeadlineExceeded
		w.done <- struct{}{}
		c.sendCancel(context.Background(), id)
	}
}

// take removes the call waiting for id, or returns nil.
func (o *outgoing) take(id int64) *waiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.waiting[id]
	if w != nil {
		delete(o.waiting, id)
	}
	return w
}

// abandon removes a call its caller gave up on and remembers its id, so a
// late answer is expected. It reports false when the answer is already
// being delivered.
func (o *outgoing) abandon(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.waiting[id]; !ok {
		return false
	}
	delete(o.waiting, id)
	o.remember(id)
	return true
}

// remember records id as given up on, under mu.
func (o *outgoing) remember(id int64) {
	o.abandoned[o.nextSlot] = id
	o.nextSlot = (o.nextSlot + 1) % abandonedKept
}

// wasAbandoned reports whether id is a call given up on recently.
func (o *outgoing) wasAbandoned(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.abandoned {
		if a == id && id != 0 {
			return true
		}
	}
	return false
}

// end fails every call still waiting, and every later one, with err.
func (o *outgoing) end(err func(method string) error, reason error) {
	o.mu.Lock()
	if o.ended == nil {
		o.ended = reason
	}
	left := o.waiting
	o.waiting = nil
	if o.expiry != nil {
		o.expiry.Stop()
		o.expiryArmed = false
	}
	o.mu.Unlock()
	for _, w := range left {
		w.err = err(w.method)
		w.done <- struct{}{}
	}
}

// deliver hands a well-formed answer to its call, on the reader, and
// returns that call (nil for a stray).
func (o *outgoing) deliver(c *Conn, v *jsonrpc2.MessageView) *waiter {
	id, isNum := v.ID.Number()
	var w *waiter
	if isNum {
		w = o.take(id)
	}
	if w == nil {
		c.stray(v)
		return nil
	}
	if v.Kind != jsonrpc2.MessageViewResponseError {
		o.settle(c, w, v.Result)
		return w
	}
	if e, ok := v.Error.Owned(); ok {
		w.err = fromWire(e)
	} else {
		w.err = c.malformed(w.method, "an error whose message is not a JSON string")
	}
	w.done <- struct{}{}
	return w
}

// deliverResult hands a successful answer scanAnswerLine read to its call,
// on the reader, and returns that call. It returns nil, having taken
// nothing, when no call waits for id: the line then goes the library's way,
// to be logged as a stray.
func (o *outgoing) deliverResult(c *Conn, id int64, result []byte) *waiter {
	w := o.take(id)
	if w == nil {
		return nil
	}
	o.settle(c, w, result)
	return w
}

// settle gives the call w its result, decoded here or kept raw when large,
// and wakes it.
func (o *outgoing) settle(c *Conn, w *waiter, result []byte) {
	switch {
	case len(result) > directDecodeMax && c.guard.owned:
		w.raw = result
	case len(result) > directDecodeMax:
		w.raw = bytes.Clone(result)
	default:
		if err := decodeResult(result, w.result); err != nil {
			w.err = c.malformed(w.method, "a result that does not decode: "+decodeProblem(err))
		}
	}
	w.done <- struct{}{}
}

// deliverMalformed fails the call a malformed answer names, and returns it
// (nil when none waits). It reports whether the line was an answer at all
// (one for nobody is logged and dropped); a line that is not is a protocol
// error for the caller.
func (o *outgoing) deliverMalformed(c *Conn, frame []byte) (*waiter, bool) {
	a, what, ok := readAnswer(frame)
	if !ok {
		return nil, false
	}
	id, isNum := answerID(a.ID)
	var w *waiter
	if isNum {
		w = o.take(id)
	}
	if w == nil {
		c.strayLog(fmt.Sprintf("%s, for id %s, which no call waits for", what, a.ID))
		return nil, true
	}
	w.err = c.malformed(w.method, what)
	w.done <- struct{}{}
	return w, true
}

// decodeResult decodes an answer's result into v (nil discards it; a null
// result leaves v as it is). A result that decodes itself
// (protocol.OperationCallResult) is handed data, which may be borrowed from
// the read buffer: what it keeps it copies.
func decodeResult(data []byte, v any) error {
	if v == nil || len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil
	}
	switch r := v.(type) {
	case *jsonrpc2.RawMessage:
		*r = bytes.Clone(data)
		return nil
	case onePassDecoder:
		if !isNilPointer(v) {
			return r.UnmarshalJSONOnePass(data)
		}
	}
	return json.Unmarshal(data, v)
}

// Call sends a request and waits for its answer, decoding the result into
// result (which may be nil). An answer's error is a *protocol.Error with the
// peer's code; a malformed answer is protocol.ErrInvalid, saying what was
// wrong, and the connection stays up; a request over the message bound is
// protocol.ErrTooLarge and is never sent; a broken connection is
// protocol.ErrTransport; when ctx ends first, Call sends $/cancel and returns
// ctx's error at once.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if j := c.holdsReader(ctx); j != nil {
		return c.callOnReader(ctx, j, method, params, result)
	}
	id, w, took, err := c.send(ctx, method, params, result, c.callerReads())
	if err != nil {
		return err
	}
	if took {
		return c.readOwn(ctx, id, w)
	}
	return c.await(ctx, id, w)
}

// Pending is a request sent whose answer has not been taken yet.
type Pending struct {
	c   *Conn
	ctx context.Context
	id  int64
	w   *waiter
}

// Start sends a request and returns once it is written, without waiting for
// its answer: a caller keeps the next request going out while the peer
// works on this one. Each Pending must be waited for exactly once. Errors
// are Call's: those of sending are Start's, the rest Wait's.
func (c *Conn) Start(ctx context.Context, method string, params, result any) (*Pending, error) {
	id, w, _, err := c.send(ctx, method, params, result, false)
	if err != nil {
		return nil, err
	}
	return &Pending{c: c, ctx: ctx, id: id, w: w}, nil
}

// Wait waits for the answer and decodes its result into the result Start
// was given, as Call does; when Start's ctx ends first, it sends $/cancel
// and returns ctx's error at once.
func (p *Pending) Wait() error { return p.c.await(p.ctx, p.id, p.w) }

// send writes a request and registers the waiter its answer goes to.
func (c *Conn) send(ctx context.Context, method string, params, result any, take bool) (int64, *waiter, bool, error) {
	id := c.out.lastID.Add(1)
	buf := getFrame()
	defer putFrame(buf)
	frame, err := c.encodeRequest(buf, method, id, params)
	if err != nil {
		return 0, nil, false, err
	}
	w := getWaiter(method, result)
	var now time.Duration
	if c.opts.CallTimeout > 0 {
		if _, ok := ctx.Deadline(); !ok {
			now = time.Since(c.epoch)
			w.deadline = now + c.opts.CallTimeout
		}
	}
	took, err := c.out.add(id, w, now, c, take)
	if err != nil {
		putWaiter(w)
		return 0, nil, false, c.transportError(method, err)
	}
	// A call from a handler on the reader releases it, once the call is
	// registered: a handler of it reading its own answer with the role
	// (ownread.go) is not released, and goes back to its work only if no
	// call waits once it has its answer, which this one now does.
	releaseReader(ctx)
	if err := c.writeLine(ctx, append(frame, '\n')); err != nil {
		if c.out.take(id) == nil {
			<-w.done
		}
		putWaiter(w)
		if took {
			c.giveBack()
		}
		return 0, nil, false, c.sendError(ctx, method, err)
	}
	return id, w, took, nil
}

// await waits for request id's answer in w; when ctx ends first, it sends
// $/cancel and returns ctx's error at once.
func (c *Conn) await(ctx context.Context, id int64, w *waiter) error {
	select {
	case <-w.done:
		return c.finish(w)
	case <-ctx.Done():
		if !c.out.abandon(id) {
			// The answer is being delivered: it came first.
			<-w.done
			return c.finish(w)
		}
		putWaiter(w)
		c.sendCancel(ctx, id)
		return ctx.Err()
	}
}

// finish returns a delivered call's outcome and recycles its waiter.
func (c *Conn) finish(w *waiter) error {
	err, raw, result, method := w.err, w.raw, w.result, w.method
	putWaiter(w)
	if err != nil || raw == nil {
		return err
	}
	if derr := decodeResult(raw, result); derr != nil {
		return c.malformed(method, "a result that does not decode: "+decodeProblem(derr))
	}
	return nil
}

// sendCancel tells the peer to stop serving id. It never holds the caller:
// the notification is written on its own goroutine.
func (c *Conn) sendCancel(ctx context.Context, id int64) {
	params := jsonrpc2.RawMessage(`{"id":` + strconv.FormatInt(id, 10) + `}`)
	go func() { _ = c.Notify(context.WithoutCancel(ctx), protocol.MethodCancel, params) }()
}

// Notify sends a notification. One over the message bound is
// protocol.ErrTooLarge and is never sent.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	releaseReader(ctx)
	buf := getFrame()
	defer putFrame(buf)
	frame, err := c.encodeRequest(buf, method, 0, params)
	if err != nil {
		return err
	}
	if err := c.writeLine(ctx, append(frame, '\n')); err != nil {
		return c.sendError(ctx, method, err)
	}
	return nil
}

// sendError classifies a failed write: the caller's own context, or the
// connection breaking (the guard has closed it).
func (c *Conn) sendError(ctx context.Context, method string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr
	}
	return c.transportError(method, err)
}

// frames are the buffers outgoing requests are encoded in, reused: a buffer
// is free again once its line is written.
var frames = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFrame is the largest buffer kept for reuse; a larger one (an
// artifact chunk) is left to the collector rather than held by the pool.
const maxPooledFrame = 1 << 20

func getFrame() *bytes.Buffer { return frames.Get().(*bytes.Buffer) }

func putFrame(b *bytes.Buffer) {
	if b.Cap() <= maxPooledFrame {
		b.Reset()
		frames.Put(b)
	}
}

// jsonAppender is params that append their own JSON, as json.Marshal would
// write it, straight into the frame (protocol.ArtifactWriteParams, whose
// chunk is base64-encoded in place).
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// appender is v as a jsonAppender, unless v is a nil pointer: json writes
// one as null, where its AppendJSON, a value method, would dereference it.
func appender(v any) (jsonAppender, bool) {
	a, ok := v.(jsonAppender)
	return a, ok && !isNilPointer(v)
}

// isNilPointer reports whether v holds a nil pointer.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// encodeRequest encodes a request's whole line once, its params marshaled
// in place, as the library frames it: {"jsonrpc":"2.0","method":…,
// "params":…,"id":…}, with no params member when they are absent or null and
// no id for a notification (id 0). A line over the message bound is refused
// too_large before anything is written; params that cannot be encoded are
// refused invalid.
func (c *Conn) encodeRequest(buf *bytes.Buffer, method string, id int64, params any) ([]byte, error) {
	buf.Write(jsonrpc2.AppendNotification(buf.AvailableBuffer(), method, nil))
	buf.Truncate(buf.Len() - 1) // the closing brace, written again below
	head := buf.Len()
	buf.WriteString(`,"params":`)
	start := buf.Len()
	switch p := params.(type) {
	case nil:
	case jsonrpc2.RawMessage:
		buf.Write(p)
	case jsonAppender:
		if isNilPointer(p) {
			buf.WriteString("null")
			break
		}
		b, err := p.AppendJSON(buf.AvailableBuffer())
		if err != nil {
			return nil, protocol.Errorf(protocol.ErrInvalid, "%s: the params cannot be encoded as JSON, so nothing was sent: %v", method, err)
		}
		buf.Write(b)
	default:
		if err := json.MarshalWrite(buf, p); err != nil {
			return nil, protocol.Errorf(protocol.ErrInvalid, "%s: the params cannot be encoded as JSON, so nothing was sent: %v", method, err)
		}
	}
	payload := buf.Bytes()[start:]
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		buf.Truncate(head)
		payload = nil
	}
	if id != 0 {
		buf.WriteString(`,"id":`)
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), id, 10))
	}
	buf.WriteByte('}')
	what := "notification"
	if id != 0 {
		what = "request"
	}
	if err := c.fits(method, what, buf.Len(), payload); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
