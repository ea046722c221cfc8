package memhost

// The artifact methods of this file apply the daemon's rules in memory
// (protocol.CheckArtifactCreate and CheckArtifactChunk, an execution named
// must be one the host holds, at most protocol.MaxOpenArtifacts open,
// offsets and digests checked, commit and abort retryable). ingress.deliver
// is served with the daemon's rule on the source; it records the delivery
// (Deliveries) instead of asking the extension's ingress.push for Events,
// so it takes a body the daemon's ingress.push path would refuse for not
// being JSON.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// Artifact is an artifact the extension wrote.
type Artifact struct {
	ID        string
	Name      string
	MediaType string
	// Execution and Work are what the artifact was written for, when it
	// named an execution the host holds.
	Execution string
	Work      string
	Data      []byte
	Chunks    int
	Committed bool
	Aborted   bool

	// parts are the chunks as received; Data is assembled on read, so a
	// large upload costs no reallocation per chunk.
	parts [][]byte
	size  int64
	// order holds a chunk that arrived ahead of the bytes before it.
	order  protocol.ChunkOrder
	sum    hash.Hash
	crc    uint32
	digest string
}

func (h *Host) artifactCreate(_ context.Context, p protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
	if err := protocol.CheckArtifactCreate(p); err != nil {
		return protocol.ArtifactCreateResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var work string
	if p.Execution != "" {
		x, ok := h.executions[p.Execution]
		if !ok {
			return protocol.ArtifactCreateResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact.create: no execution %q of %s's executors", p.Execution, h.name)
		}
		work = x.Work
	}
	open := 0
	for _, a := range h.artifacts {
		if !a.Committed && !a.Aborted {
			open++
		}
	}
	if open >= protocol.MaxOpenArtifacts {
		return protocol.ArtifactCreateResult{}, protocol.Errorf(protocol.ErrOverloaded, "artifact.create: %s has %d artifacts open; commit or abort one first", h.name, open)
	}
	h.nextID++
	id := fmt.Sprintf("a_%026d", h.nextID)
	h.artifacts[id] = &Artifact{ID: id, Name: p.Name, MediaType: p.MediaType, Execution: p.Execution, Work: work, sum: sha256.New()}
	return protocol.ArtifactCreateResult{Artifact: id}, nil
}

func (h *Host) artifactWrite(ctx context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
	if err := protocol.CheckArtifactChunk(p); err != nil {
		return protocol.ArtifactWriteResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.artifacts[p.Artifact]
	if ok {
		// It announces protocol.ArtifactWindow, as the daemon does: a
		// chunk ahead of the bytes written waits for those before it.
		ahead := func() bool { return p.Offset > a.size && !a.Committed && !a.Aborted }
		if err := a.order.Await(ctx, &h.mu, p, protocol.ArtifactAheadWaitMillis*time.Millisecond, ahead); err != nil {
			return protocol.ArtifactWriteResult{}, err
		}
	}
	if !ok || a.Committed || a.Aborted {
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact %q is not open", p.Artifact)
	}
	if p.Offset != a.size {
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict, "artifact %s: chunk at offset %d, but %d bytes are written", a.ID, p.Offset, a.size)
	}
	a.parts = append(a.parts, p.Data)
	a.sum.Write(p.Data)
	a.crc = crc32.Update(a.crc, crc32.IEEETable, p.Data)
	a.size += int64(len(p.Data))
	a.Chunks++
	a.order.Moved()
	return protocol.ArtifactWriteResult{Size: a.size}, nil
}

func (h *Host) artifactCommit(_ context.Context, p protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.artifacts[p.Artifact]
	if !ok || a.Aborted {
		return protocol.ArtifactCommitResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact %q is not open", p.Artifact)
	}
	if a.Committed {
		return protocol.ArtifactCommitResult{Artifact: a.ID, Size: a.size, Digest: a.digest}, nil
	}
	digest := hex.EncodeToString(a.sum.Sum(nil))
	if err := protocol.CheckArtifactCommit(p, a.size, digest, a.crc); err != nil {
		return protocol.ArtifactCommitResult{}, err
	}
	a.Committed, a.digest = true, digest
	a.order.Moved()
	return protocol.ArtifactCommitResult{Artifact: a.ID, Size: a.size, Digest: digest}, nil
}

func (h *Host) artifactAbort(_ context.Context, p protocol.ArtifactAbortParams) (struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.artifacts[p.Artifact]; ok && !a.Committed {
		a.Aborted = true
		a.order.Moved()
	}
	return struct{}{}, nil
}

// Artifacts returns every artifact, by ID.
func (h *Host) Artifacts() map[string]Artifact {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]Artifact{}
	for id, a := range h.artifacts {
		out[id] = Artifact{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Execution: a.Execution, Work: a.Work, Data: bytes.Join(a.parts, nil), Chunks: a.Chunks, Committed: a.Committed, Aborted: a.Aborted}
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

// Deliveries returns every accepted delivery.
func (h *Host) Deliveries() []protocol.IngressDeliverParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.IngressDeliverParams(nil), h.deliveries...)
}
