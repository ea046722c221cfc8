package sdk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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

func (h *Host) setStateDir(dir string) {
	h.mu.Lock()
	h.stateDir = dir
	h.mu.Unlock()
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
	return &ArtifactWriter{h: h, ctx: ctx, id: r.Artifact, sum: sha256.New()}, nil
}

// ArtifactWriter writes one artifact. It is an io.Writer; call Commit (or
// Abort) when done. It is not safe for concurrent use.
type ArtifactWriter struct {
	h      *Host
	ctx    context.Context
	id     string
	offset int64
	sum    hash.Hash
	err    error
}

// ID names the artifact.
func (w *ArtifactWriter) ID() string { return w.id }

// hashAsideFrom is the smallest chunk hashed on a goroutine of its own
// while it travels: a smaller one costs less to hash than to hand over.
const hashAsideFrom = 16 << 10

// Write sends p in chunks, each acknowledged before the next. A large
// chunk is hashed while it is encoded, sent and acknowledged, instead of
// after: the writer waits for the host anyway, and on two cores the digest
// then costs the upload nothing (16 MiB in 256 KiB chunks went 133 -> 150
// MiB/s). The digest still takes the chunks in order, each before the next
// is sent.
func (w *ArtifactWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), protocol.MaxChunkBytes)
		chunk := p[:n]
		var hashed chan struct{}
		if n >= hashAsideFrom {
			hashed = make(chan struct{})
			go func() {
				w.sum.Write(chunk)
				close(hashed)
			}()
		}
		_, err := invoke(w.ctx, w.h, protocol.ArtifactWrite,
			protocol.ArtifactWriteParams{Artifact: w.id, Offset: w.offset, Data: chunk})
		if hashed != nil {
			<-hashed
		}
		if err != nil {
			w.err = fmt.Errorf("artifact %s at %d: %w", w.id, w.offset, err)
			return written, w.err
		}
		if hashed == nil {
			w.sum.Write(chunk)
		}
		w.offset += int64(n)
		written += n
		p = p[n:]
	}
	return written, nil
}

// Commit commits the artifact, checked against the digest of every byte
// written.
func (w *ArtifactWriter) Commit() (ArtifactCommitResult, error) {
	if w.err != nil {
		return ArtifactCommitResult{}, w.err
	}
	return invoke(w.ctx, w.h, protocol.ArtifactCommit,
		protocol.ArtifactCommitParams{Artifact: w.id, Digest: hex.EncodeToString(w.sum.Sum(nil))})
}

// Abort abandons the artifact.
func (w *ArtifactWriter) Abort() error {
	_, err := invoke(context.WithoutCancel(w.ctx), w.h, protocol.ArtifactAbort,
		protocol.ArtifactAbortParams{Artifact: w.id})
	return err
}
