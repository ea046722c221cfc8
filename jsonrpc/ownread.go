package jsonrpc

import (
	"context"
	"sync"
	"time"
)

// A caller reads its own answer (Options.CallerReads). Handing an answer
// from the reading goroutine to the caller waiting for it wakes that caller,
// and on a machine with idle cores the runtime wakes a second thread with it
// (a futex and an interrupt to another core): several microseconds of every
// round trip, which a caller that reads the answer itself does not pay.
//
// So the reader role can be left free between calls. A reading goroutine
// leaves it free when it has just delivered an answer, no other call waits
// and nothing more is read already (freeRole); it then parks as the keeper.
// A call registered while the role is free takes it (outgoing.add) and
// reads until its own answer is among the lines (readOwn), delivering the
// answers of other calls on the way. It takes answers only: a request or
// notification it meets goes back unread (guard.unread) and the role with it
// to the keeper, which serves it as a reading goroutine does, so no handler
// holds a caller whose answer has come (a line too long to go back, over the
// read buffer, is served where it was read). With its answer, the caller
// leaves the role free again when nothing else waits, or hands it to the
// keeper when another call does. A line nobody asked for that arrives while
// the role is free waits for the next call, which hands it to the keeper, or
// for the keeper itself, which takes the role back when a whole keepIdle
// passed with no call taking it. A caller whose context ends, or whose
// CallTimeout passes, while it reads is interrupted through the reader's
// deadline (a kick) and then waits as any other caller.

// keepIdle is how long the role stays free with no call taking it before
// the keeper reads again. The runtime's timers wake an idle process in
// whole milliseconds, so a line the peer sends unasked between calls may
// wait about that long.
const keepIdle = time.Millisecond

// ownLanes are the lanes callers read their own answers with: a caller
// whose served request released the role keeps its lane until that request
// is done, while the next caller reads with another.
var ownLanes = sync.Pool{New: func() any { return newLane() }}

// callerReads reports whether a call may read its own answer: the option
// is set and the reader's read can be interrupted.
func (c *Conn) callerReads() bool { return c.opts.CallerReads && c.guard.rdl != nil }

// freeRole leaves the reader role free, on the goroutine holding it, when no
// call waits and nothing more is read already; under the calls' lock, so a
// call registered after it takes the role and one registered before it is
// read for.
func (c *Conn) freeRole() bool {
	if !c.callerReads() || c.guard.buffered() || c.hasPending.Load() {
		return false
	}
	return c.freeIfNoneWaits()
}

// freeIfNoneWaits leaves the reader role, which the goroutine calling
// holds, free when no call waits and the connection has not ended, and
// reports whether it did; under the calls' lock, so a call registered after
// it takes the role and one registered before it is read for.
func (c *Conn) freeIfNoneWaits() bool {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	if len(c.out.waiting) > 0 || c.out.ended != nil {
		return false
	}
	c.roleFree.Store(true)
	return true
}

// keep waits, the reader role left free, until this goroutine holds it
// again: a caller handed it back, a whole keepIdle passed with no call
// taking it, or the connection is ending. It reports false when the
// goroutine is to exit: another keeper waits already and no spare was
// wanted, or the connection ended with the role in a caller's hands (that
// caller sees the end).
func (c *Conn) keep() bool {
	if !c.keeperIn.CompareAndSwap(false, true) {
		return c.park()
	}
	defer c.keeperIn.Store(false)
	gen := c.roleGen.Load()
	t := time.NewTimer(c.opts.keepIdle)
	defer t.Stop()
	done := c.ctx.Done()
	for {
		select {
		case <-c.roleBack:
			return true
		case <-t.C:
			g := c.roleGen.Load()
			if g == gen && c.roleFree.CompareAndSwap(true, false) {
				return true
			}
			gen = g
			t.Reset(c.opts.keepIdle)
		case <-done:
			if c.roleFree.CompareAndSwap(true, false) {
				return true
			}
			select {
			case <-c.roleBack:
				return true
			default:
				return false
			}
		}
	}
}

// readOwn reads, on the caller's goroutine, which took the free reader role
// when it registered call id, until w's answer is delivered; then it leaves
// the role free or hands it on. When the role passed on while it read (a
// request it served released it), its context ended, or reading ended, it
// waits for the answer as every other caller does.
func (c *Conn) readOwn(ctx context.Context, id int64, w *waiter) error {
	c.roleGen.Add(1)
	switch c.readFor(ctx, w, true) {
	case endOwn:
		c.giveBack()
		<-w.done
		return c.finish(w)
	case endKicked, endYield:
		c.giveBack()
	case endRead:
		c.ended()
		c.roleFree.Store(true)
	}
	return c.await(ctx, id, w)
}

// readFor reads with the reader role, which the goroutine calling holds,
// until w's answer is delivered or reading stops for another reason, and
// says which. With watch set, ctx ending interrupts the read (a kick).
func (c *Conn) readFor(ctx context.Context, w *waiter, watch bool) readEnd {
	l := ownLanes.Get().(*lane)
	var stop func() bool
	if watch && ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.guard.kick)
	}
	c.ownReading.Add(1)
	end := c.readLines(l, w)
	c.ownReading.Add(-1)
	if stop != nil {
		stop()
	}
	ownLanes.Put(l)
	return end
}

// handBack gives the reader role, which the goroutine calling holds but
// will not read with, to the keeper.
func (c *Conn) handBack() {
	select {
	case c.roleBack <- struct{}{}:
	default:
		// Already handed back once and not taken: the keeper left as the
		// connection ended.
	}
}

// giveBack lets go of the reader role a caller holds: free when no other
// call waits and nothing more is read already, else to the keeper, which
// reads for the calls waiting.
func (c *Conn) giveBack() {
	c.flush()
	if c.guard.buffered() || !c.freeIfNoneWaits() {
		c.handBack()
	}
}

// A handler running on the reader that calls the peer (Call) reads its own
// answer with the role it holds. Passing the role to the spare and being
// woken by it with the answer costs a goroutine woken and, on a machine with
// idle cores, a thread woken with it, once for the release and once for
// every answer; reading here costs neither. A handler that calls the peer
// several times in a row (kv.commit after kv.commit) paid that on each call.
// This needs no option: unlike a caller taking a free role, the role is
// never left free.
//
// The role is held while the answer is read and the call's state is
// jobReading, so neither a second call of the same handler nor the grace
// timer releases it meanwhile. Answers of other calls read on the way are
// delivered; a request or notification met is put back unread and the call
// released on the spot (the spare reads it), so no message waits for the
// answer; so does an interrupted read (the call's context ended, or a
// CallTimeout passed). With its answer the handler goes on on the reader,
// its grace period counted again from there, unless another call waits
// or more lines are read already: then it is released.

// holdsReader returns the call ctx belongs to when it is running on this
// connection's reader and its answer can be read here (the read can be
// interrupted), and marks it reading; else nil. A call served inside
// another's read of its own answer (a line too long to go back) does not
// read its own: the outer read would go on for an answer delivered already.
func (c *Conn) holdsReader(ctx context.Context) *job {
	j, ok := ctx.Value(jobKey{}).(*job)
	if !ok || j.conn != c || c.guard.rdl == nil || c.ownReading.Load() > 0 ||
		!j.state.CompareAndSwap(jobRunning, jobReading) {
		return nil
	}
	return j
}

// callOnReader is Call for a handler holding the reader role (holdsReader).
func (c *Conn) callOnReader(ctx context.Context, j *job, method string, params, result any) error {
	id, w, _, err := c.send(ctx, method, params, result, false)
	if err != nil {
		c.resume(j)
		return err
	}
	// The call's own context ends only by a $/cancel, which is read here,
	// or with the connection, which ends the read; a context derived from it
	// may end by itself.
	switch c.readFor(ctx, w, ctx != context.Context(j)) {
	case endOwn:
		c.resume(j)
		<-w.done
		return c.finish(w)
	case endRead:
		j.letGo(false)
		c.ended()
	case endPassed:
		// A line too long to go back was served here, and its call
		// passed the role on.
		j.letGo(false)
	default:
		j.letGo(true)
	}
	return c.await(ctx, id, w)
}

// resume returns a reading call to its work on the reader, its grace
// period counted from now (the timer armed if it went unarmed while the
// call read), or releases it when another call waits for an answer or more
// lines are read already, so those are read for at once rather than when
// the grace period ends. Under the calls' lock, so a call of the same
// handler registered meanwhile either sees it running and releases it
// (send releases again once the call is registered), or is seen here.
func (c *Conn) resume(j *job) {
	c.out.mu.Lock()
	if len(c.out.waiting) > 0 || c.out.ended != nil || c.guard.buffered() {
		c.out.mu.Unlock()
		j.letGo(true)
		return
	}
	now := time.Since(c.epoch)
	j.started.Store(int64(now))
	j.state.Store(jobRunning)
	c.out.mu.Unlock()
	c.running.Store(j)
	if !c.graceBusy.Load() {
		c.graceBusy.Store(true)
	}
	if c.graceArmed.CompareAndSwap(false, true) {
		c.graceTimer.Reset(j.grace)
	}
	c.flush()
}

// letGo releases a reading call, passing the role on when handOff is set
// (not when a call served while reading passed it already, or reading has
// ended).
func (j *job) letGo(handOff bool) {
	j.releasing.Lock()
	defer j.releasing.Unlock()
	if !j.state.CompareAndSwap(jobReading, jobReleased) {
		return
	}
	if handOff {
		j.conn.flush()
		j.conn.handOff()
	}
}
