package sdk

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Host is the extension's client for the host's methods (E→H). Every call is
// scoped by the host to the identity it started the process with: KV only in
// the extension's own namespaces, state only in its scopes. Every handler
// finds it in its Request. It is safe for concurrent use.
type Host struct {
	// c is the connection to the host, set once before ready is closed.
	c     *jsonrpc.Conn
	ready chan struct{}
	name  string

	mu       sync.Mutex
	stateDir string
	// window is the artifact window initialize announced (1 when none).
	window int
}

func newHost(name string) *Host { return &Host{name: name, ready: make(chan struct{})} }

// setConn records the connection to the host, once.
func (h *Host) setConn(c *jsonrpc.Conn) {
	h.c = c
	close(h.ready)
}

// conn is the connection to the host. The connection reads from its first
// moment, before ServeStreams can record it, so a handler running in that
// instant (on a loaded machine, after initialize, configure and a call)
// waits here for it rather than finding none.
func (h *Host) conn() *jsonrpc.Conn {
	<-h.ready
	return h.c
}

// Name is the extension's name, the root of its namespaces.
func (h *Host) Name() string { return h.name }

// StateDir is the extension's private state directory, as initialize named
// it.
func (h *Host) StateDir() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateDir
}

// initialized records what initialize told the extension.
func (h *Host) initialized(p protocol.InitializeParams) {
	h.mu.Lock()
	h.stateDir = p.StateDir
	h.window = max(1, min(p.ArtifactWindow, protocol.ArtifactWindow))
	h.mu.Unlock()
}

// artifactWindow is how many chunks of one artifact may be unanswered.
func (h *Host) artifactWindow() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(1, h.window)
}

// Call sends any host method by name: the escape hatch for methods this
// client has no wrapper for yet.
func (h *Host) Call(ctx context.Context, method string, params, result any) error {
	return h.call(ctx, method, params, result)
}

// Value is a KV read: the bytes and their version, or Found false.
type Value struct {
	Found   bool
	Value   []byte
	Version string
}

// Get reads one key of one of the extension's namespaces.
func (h *Host) Get(ctx context.Context, namespace, key string) (Value, error) {
	r, err := invoke(ctx, h, protocol.KVGet, protocol.KVGetParams{Namespace: namespace, Key: key})
	if err != nil {
		return Value{}, err
	}
	return Value{Found: r.Found, Value: r.Value, Version: r.Version}, nil
}

// List reads every key of a namespace under prefix, in key order, paging
// through kv.list: the host ends a page at its count or its bytes, and says
// more follows, so a page short of the count is not the end.
func (h *Host) List(ctx context.Context, namespace, prefix string) ([]KVItem, error) {
	var out []KVItem
	after := ""
	for {
		p := protocol.KVListParams{Namespace: namespace, Prefix: prefix, After: after, Limit: protocol.KVMaxList}
		r, err := invoke(ctx, h, protocol.KVList, p)
		if err != nil {
			return nil, err
		}
		out = append(out, r.Items...)
		if !r.More || len(r.Items) == 0 {
			return out, nil
		}
		after = r.Items[len(r.Items)-1].Key
	}
}

// Batch is a set of KV preconditions and writes that kv.commit applies as
// one atomic unit: every check holds and every write applies, or nothing
// does. Like Pebble's Batch it is not safe for concurrent use.
type Batch struct {
	p protocol.KVCommitParams
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Check requires the key's version to be version when the batch commits.
func (b *Batch) Check(namespace, key, version string) *Batch {
	b.p.Checks = append(b.p.Checks, protocol.KVCheck{Namespace: namespace, Key: key, Version: version})
	return b
}

// CheckAbsent requires the key to be absent when the batch commits.
func (b *Batch) CheckAbsent(namespace, key string) *Batch {
	b.p.Checks = append(b.p.Checks, protocol.KVCheck{Namespace: namespace, Key: key, Absent: true})
	return b
}

// Put writes value under key.
func (b *Batch) Put(namespace, key string, value []byte) *Batch {
	b.p.Puts = append(b.p.Puts, protocol.KVPut{Namespace: namespace, Key: key, Value: value})
	return b
}

// Delete removes key.
func (b *Batch) Delete(namespace, key string) *Batch {
	b.p.Deletes = append(b.p.Deletes, protocol.KVDelete{Namespace: namespace, Key: key})
	return b
}

// Emit adds an Event of one of the extension's families for the host to
// accept in the same atomic unit.
func (b *Batch) Emit(e Emission) *Batch {
	b.p.Emissions = append(b.p.Emissions, e)
	return b
}

// Empty reports whether the batch holds nothing.
func (b *Batch) Empty() bool {
	return len(b.p.Checks)+len(b.p.Puts)+len(b.p.Deletes)+len(b.p.Emissions) == 0
}

// Commit applies the batch. A failed check is ErrConflict and applies
// nothing; re-read and retry. A batch holding anything over its bound (a
// value, a payload, a name) is ErrTooLarge before it is sent, as the host
// would refuse it.
func (h *Host) Commit(ctx context.Context, b *Batch) (KVCommitResult, error) {
	if err := protocol.CheckBounds(b.p); err != nil {
		return KVCommitResult{}, err
	}
	return invoke(ctx, h, protocol.KVCommit, b.p)
}

// maxUpdateAttempts bounds Update's retries on conflict.
const maxUpdateAttempts = 16

// Update reads key, applies fn to its value, and commits what fn returns
// guarded by the version it read, retrying on conflict. fn gets a fresh
// Batch on each attempt: whatever it adds there (an Emit, a Put of another
// key) commits in the same atomic unit as the key's write, so an Event is
// emitted exactly when the write lands, and an attempt that conflicts
// applies nothing of it. fn may run more than once, so it must not have
// effects of its own beyond the Batch. fn returning nil next deletes the
// key.
func (h *Host) Update(ctx context.Context, namespace, key string,
	fn func(old []byte, found bool, b *Batch) (next []byte, err error)) (KVCommitResult, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		cur, err := h.Get(ctx, namespace, key)
		if err != nil {
			return KVCommitResult{}, err
		}
		b := NewBatch()
		next, err := fn(cur.Value, cur.Found, b)
		if err != nil {
			return KVCommitResult{}, err
		}
		if cur.Found {
			b.Check(namespace, key, cur.Version)
		} else {
			b.CheckAbsent(namespace, key)
		}
		if next == nil {
			b.Delete(namespace, key)
		} else {
			b.Put(namespace, key, next)
		}
		res, err := h.Commit(ctx, b)
		if !errors.Is(err, protocol.ErrConflict) {
			return res, err
		}
	}
	return KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%s: still conflicting after %d attempts", namespace, key, maxUpdateAttempts)
}

// Deliver hands one input from the extension's own receiver to the host,
// which answers only after accepting it durably: acknowledge upstream only
// then.
func (h *Host) Deliver(ctx context.Context, p IngressDeliverParams) (IngressDeliverResult, error) {
	return invoke(ctx, h, protocol.IngressDeliver, p)
}

// Artifact opens an artifact writer: bytes written are sent in acknowledged
// chunks of at most 256 KiB, so a slow host slows the writer rather than
// filling memory.
func (h *Host) Artifact(ctx context.Context, p ArtifactCreateParams) (*ArtifactWriter, error) {
	r, err := invoke(ctx, h, protocol.ArtifactCreate, p)
	if err != nil {
		return nil, err
	}
	return &ArtifactWriter{h: h, ctx: ctx, id: r.Artifact, window: h.artifactWindow()}, nil
}

// ArtifactWriter writes one artifact. It is an io.Writer; call Commit (or
// Abort) when done. It is not safe for concurrent use.
type ArtifactWriter struct {
	h      *Host
	ctx    context.Context
	id     string
	offset int64
	// crc is the CRC-32 (IEEE) of every byte written, which Commit sends
	// for the host to check. Not SHA-256: crypto/sha256 would add its
	// package setup (about 0.1 ms) to every start of every extension,
	// while the host computes the SHA-256 it files the bytes under.
	crc uint32
	err error
	// window is the host's artifact window: with 2, a chunk stays in
	// flight while the next is encoded and sent.
	window int
	// inflight is the chunk sent and not yet answered, if any; held is
	// its bytes, copied, for a resend after a reentrant_call refusal.
	inflight *sentChunk
	held     []byte
}

// sentChunk is one artifact.write sent and not yet answered.
type sentChunk struct {
	pending *jsonrpc.Pending
	cancel  context.CancelFunc
	params  protocol.ArtifactWriteParams
}

// ID names the artifact.
func (w *ArtifactWriter) ID() string { return w.id }

// Write sends p in chunks of at most protocol.MaxChunkBytes, each
// acknowledged by the host. When the host announces an artifact window of
// two (the daemon does), a chunk is left in flight while the next is
// encoded and sent, so the host decodes and stores one while the extension
// prepares the next: Write then returns once its last chunk is sent, and
// the next Write, Commit or Abort waits for that chunk's answer and reports
// its error. Otherwise each chunk is answered before the next goes out.
func (w *ArtifactWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), protocol.MaxChunkBytes)
		chunk := p[:n]
		params := protocol.ArtifactWriteParams{Artifact: w.id, Offset: w.offset, Data: chunk}
		var err error
		if w.window > 1 {
			err = w.sendBehind(params)
		} else if _, err = invoke(w.ctx, w.h, protocol.ArtifactWrite, params); err != nil {
			err = w.fail(params.Offset, err)
		}
		if err != nil {
			return written, w.err
		}
		w.crc = crc32.Update(w.crc, crc32.IEEETable, chunk)
		w.offset += int64(n)
		written += n
		p = p[n:]
	}
	if c := w.inflight; c != nil {
		// The caller may reuse p once Write returns.
		w.held = append(w.held[:0], c.params.Data...)
		c.params.Data = w.held
	}
	return written, nil
}

// sendBehind sends params, then waits for the chunk sent before it, so one
// is always in flight; on an error it records it in w.err, with the chunk
// sent abandoned.
func (w *ArtifactWriter) sendBehind(params protocol.ArtifactWriteParams) error {
	ctx, cancel := context.WithCancel(w.ctx)
	pending, err := w.h.conn().Start(ctx, protocol.MethodArtifactWrite, params, nil)
	if err != nil {
		cancel()
		w.abandon()
		return w.fail(params.Offset, err)
	}
	if err := w.settle(); err != nil {
		cancel()
		_ = pending.Wait()
		return err
	}
	w.inflight = &sentChunk{pending: pending, cancel: cancel, params: params}
	return nil
}

// settle waits for the chunk in flight, if any, sending it again while the
// host refuses it reentrant_call as every host call is (Host.call); its
// error is recorded in w.err.
func (w *ArtifactWriter) settle() error {
	c := w.inflight
	if c == nil {
		return nil
	}
	w.inflight = nil
	err := c.pending.Wait()
	c.cancel()
	if errors.Is(err, protocol.ErrReentrantCall) && !inTransaction(w.ctx) {
		err = w.h.call(w.ctx, protocol.MethodArtifactWrite, c.params, nil)
	}
	if err != nil {
		return w.fail(c.params.Offset, err)
	}
	return nil
}

// abandon gives up the chunk in flight, if any: its call is cancelled, so
// the host stops holding it ($/cancel) and its Wait returns at once.
func (w *ArtifactWriter) abandon() {
	if c := w.inflight; c != nil {
		w.inflight = nil
		c.cancel()
		_ = c.pending.Wait()
	}
}

// fail records the error of the chunk at offset and returns it.
func (w *ArtifactWriter) fail(offset int64, err error) error {
	w.err = fmt.Errorf("artifact %s at %d: %w", w.id, offset, err)
	return w.err
}

// Commit commits the artifact, checked by the host against the CRC-32 of
// every byte written; the result names the SHA-256 the host files it under.
func (w *ArtifactWriter) Commit() (ArtifactCommitResult, error) {
	if w.err == nil {
		_ = w.settle()
	}
	if w.err != nil {
		return ArtifactCommitResult{}, w.err
	}
	return invoke(w.ctx, w.h, protocol.ArtifactCommit,
		protocol.ArtifactCommitParams{Artifact: w.id, CRC32: protocol.FormatCRC32(w.crc)})
}

// Abort abandons the artifact.
func (w *ArtifactWriter) Abort() error {
	w.abandon()
	_, err := invoke(context.WithoutCancel(w.ctx), w.h, protocol.ArtifactAbort,
		protocol.ArtifactAbortParams{Artifact: w.id})
	return err
}
