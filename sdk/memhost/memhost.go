// Package memhost is an in-memory host service for one extension: the host
// side of the KV, artifact and delivery methods with the daemon's rules, and
// no store. sdktest serves extensions against it; so does anything that
// needs the host side of the protocol without a daemon.
package memhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Host is an in-memory host service for one extension: KV with the
// daemon's rules (versions, preconditions, the extension's own namespaces
// only, all-or-nothing batches), artifacts written in acknowledged chunks,
// and deliveries from the extension's receivers. It is safe for concurrent
// use.
type Host struct {
	name string

	mu         sync.Mutex
	kv         map[string]map[string][]byte
	commits    []protocol.KVCommitParams
	artifacts  map[string]*Artifact
	nextID     int
	deliveries []protocol.IngressDeliverParams
}

// Artifact is an artifact the extension wrote.
type Artifact struct {
	ID        string
	Name      string
	Data      []byte
	Chunks    int
	Committed bool
	Aborted   bool

	// parts are the chunks as received; Data is assembled on read, so a
	// large upload costs no reallocation per chunk.
	parts [][]byte
	size  int64
	sum   hash.Hash
}

// New returns an empty host for the extension named name.
func New(name string) *Host {
	return &Host{name: name, kv: map[string]map[string][]byte{}, artifacts: map[string]*Artifact{}}
}

// Table is the host's methods, for a session's or a test connection's
// Handlers.
func (h *Host) Table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Handle(t, protocol.MethodKVGet, h.get)
	jsonrpc.Handle(t, protocol.MethodKVList, h.list)
	jsonrpc.Handle(t, protocol.MethodKVCommit, h.commit)
	jsonrpc.Handle(t, protocol.MethodArtifactCreate, h.artifactCreate)
	jsonrpc.Handle(t, protocol.MethodArtifactWrite, h.artifactWrite)
	jsonrpc.Handle(t, protocol.MethodArtifactCommit, h.artifactCommit)
	jsonrpc.Handle(t, protocol.MethodArtifactAbort, h.artifactAbort)
	jsonrpc.Handle(t, protocol.MethodIngressDeliver, h.deliver)
	return t
}

func (h *Host) ownNamespace(ns string) error {
	if !protocol.Namespace(h.name, ns) {
		return protocol.Errorf(protocol.ErrUnauthorized,
			"namespace %q is not %s's: an extension reads and writes only %s and %s.*", ns, h.name, h.name, h.name)
	}
	return nil
}

func (h *Host) get(_ context.Context, p protocol.KVGetParams) (protocol.KVGetResult, error) {
	if err := h.ownNamespace(p.Namespace); err != nil {
		return protocol.KVGetResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.kv[p.Namespace][p.Key]
	if !ok {
		return protocol.KVGetResult{}, nil
	}
	return protocol.KVGetResult{Found: true, Value: bytes.Clone(v), Version: protocol.KVVersion(v)}, nil
}

func (h *Host) list(_ context.Context, p protocol.KVListParams) (protocol.KVListResult, error) {
	if err := h.ownNamespace(p.Namespace); err != nil {
		return protocol.KVListResult{}, err
	}
	limit := p.Limit
	if limit <= 0 || limit > protocol.KVMaxList {
		limit = protocol.KVMaxList
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.kv[p.Namespace]))
	for k := range h.kv[p.Namespace] {
		if strings.HasPrefix(k, p.Prefix) && k > p.After {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := protocol.KVListResult{Items: []protocol.KVItem{}}
	for i, k := range keys {
		if i == limit {
			res.More = true
			break
		}
		v := h.kv[p.Namespace][k]
		res.Items = append(res.Items, protocol.KVItem{Key: k, Value: bytes.Clone(v), Version: protocol.KVVersion(v)})
	}
	return res, nil
}

func (h *Host) commit(_ context.Context, p protocol.KVCommitParams) (protocol.KVCommitResult, error) {
	for _, c := range p.Checks {
		if err := h.ownNamespace(c.Namespace); err != nil {
			return protocol.KVCommitResult{}, err
		}
	}
	for _, w := range p.Puts {
		if err := h.ownNamespace(w.Namespace); err != nil {
			return protocol.KVCommitResult{}, err
		}
	}
	for _, d := range p.Deletes {
		if err := h.ownNamespace(d.Namespace); err != nil {
			return protocol.KVCommitResult{}, err
		}
	}
	if len(p.Emissions) > 0 {
		return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrUnsupported, "kv.commit emissions need the daemon's event log; the in-memory host does not serve them")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range p.Checks {
		v, ok := h.kv[c.Namespace][c.Key]
		switch {
		case c.Absent && ok:
			return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%s exists; the batch required it absent", c.Namespace, c.Key)
		case !c.Absent && (!ok || protocol.KVVersion(v) != c.Version):
			return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%s changed since version %s was read", c.Namespace, c.Key, c.Version)
		}
	}
	res := protocol.KVCommitResult{}
	for _, w := range p.Puts {
		if h.kv[w.Namespace] == nil {
			h.kv[w.Namespace] = map[string][]byte{}
		}
		h.kv[w.Namespace][w.Key] = bytes.Clone(w.Value)
		res.Versions = append(res.Versions, protocol.KVVersion(w.Value))
	}
	for _, d := range p.Deletes {
		delete(h.kv[d.Namespace], d.Key)
	}
	h.commits = append(h.commits, p)
	return res, nil
}

func (h *Host) artifactCreate(_ context.Context, p protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
	if p.Name == "" {
		return protocol.ArtifactCreateResult{}, protocol.Errorf(protocol.ErrInvalid, "artifact.create: name is required")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	id := "art-" + strconv.Itoa(h.nextID)
	h.artifacts[id] = &Artifact{ID: id, Name: p.Name, sum: sha256.New()}
	return protocol.ArtifactCreateResult{Artifact: id}, nil
}

func (h *Host) artifactWrite(_ context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
	if len(p.Data) > protocol.MaxChunkBytes {
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrInvalid, "artifact.write: a chunk of %d bytes is over the %d-byte bound", len(p.Data), protocol.MaxChunkBytes)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.artifacts[p.Artifact]
	if !ok || a.Committed || a.Aborted {
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact %q is not open", p.Artifact)
	}
	if p.Offset != a.size {
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict, "artifact %s: chunk at offset %d, but %d bytes are written", a.ID, p.Offset, a.size)
	}
	a.parts = append(a.parts, p.Data)
	a.sum.Write(p.Data)
	a.size += int64(len(p.Data))
	a.Chunks++
	return protocol.ArtifactWriteResult{Size: a.size}, nil
}

func (h *Host) artifactCommit(_ context.Context, p protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.artifacts[p.Artifact]
	if !ok || a.Aborted {
		return protocol.ArtifactCommitResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact %q is not open", p.Artifact)
	}
	digest := hex.EncodeToString(a.sum.Sum(nil))
	if p.Digest != "" && p.Digest != digest {
		return protocol.ArtifactCommitResult{}, protocol.Errorf(protocol.ErrConflict, "artifact %s: digest %s does not match the %d bytes received", a.ID, p.Digest, a.size)
	}
	a.Committed = true
	return protocol.ArtifactCommitResult{Artifact: a.ID, Size: a.size, Digest: digest}, nil
}

func (h *Host) artifactAbort(_ context.Context, p protocol.ArtifactAbortParams) (struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.artifacts[p.Artifact]; ok && !a.Committed {
		a.Aborted = true
	}
	return struct{}{}, nil
}

func (h *Host) deliver(_ context.Context, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error) {
	if !protocol.SourceNamespace(h.name, p.Source) {
		return protocol.IngressDeliverResult{}, protocol.Errorf(protocol.ErrUnauthorized, "source %q is not %s's", p.Source, h.name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.deliveries {
		if d.Source == p.Source && d.DeliveryID == p.DeliveryID {
			return protocol.IngressDeliverResult{Accepted: true, Duplicate: true}, nil
		}
	}
	h.deliveries = append(h.deliveries, p)
	return protocol.IngressDeliverResult{Accepted: true}, nil
}

// Put seeds a KV value.
func (h *Host) Put(namespace, key string, value []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kv[namespace] == nil {
		h.kv[namespace] = map[string][]byte{}
	}
	h.kv[namespace][key] = bytes.Clone(value)
}

// KV returns a copy of one namespace.
func (h *Host) KV(namespace string) map[string][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range h.kv[namespace] {
		out[k] = bytes.Clone(v)
	}
	return out
}

// Commits returns every applied kv.commit batch.
func (h *Host) Commits() []protocol.KVCommitParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.KVCommitParams(nil), h.commits...)
}

// Artifacts returns every artifact, by ID.
func (h *Host) Artifacts() map[string]Artifact {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]Artifact{}
	for id, a := range h.artifacts {
		out[id] = Artifact{ID: a.ID, Name: a.Name, Data: bytes.Join(a.parts, nil), Chunks: a.Chunks, Committed: a.Committed, Aborted: a.Aborted}
	}
	return out
}

// DropArtifacts forgets every artifact, so a long benchmark does not keep
// what it uploaded.
func (h *Host) DropArtifacts() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.artifacts = map[string]*Artifact{}
}

// Deliveries returns every accepted delivery.
func (h *Host) Deliveries() []protocol.IngressDeliverParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.IngressDeliverParams(nil), h.deliveries...)
}
