// Package wiretap keeps the recent JSON-RPC lines between the host and one
// extension in a bounded ring, for the operator's wire tap: each line with
// its direction, kind, method, id, size and, for an answer, the latency
// since its request. The ring is bounded by count and by bytes, and each
// line's text is cut at MaxMessageText, so a busy or chatty extension
// cannot grow the daemon's memory. The result of a secret.resolve answer
// (a secret's value) is never kept.
package wiretap

import (
	"bytes"
	"context"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// Default bounds of a ring.
const (
	// MaxEntries is how many lines a ring holds by default.
	MaxEntries = 256
	// MaxBytes is the default budget of the lines' kept text.
	MaxBytes = 512 << 10
	// MaxMessageText is how much of one line's text is kept.
	MaxMessageText = 4 << 10
	// maxPending bounds the requests waiting for an answer that the ring
	// remembers (for the answer's method and latency).
	maxPending = 1024
	// entryOverhead is what an entry costs besides its text.
	entryOverhead = 128
)

// RedactedResult replaces the result of a secret.resolve answer.
const RedactedResult = `"[redacted by the wire tap]"`

// Options bounds a ring. Zero values mean the defaults.
type Options struct {
	MaxEntries int
	MaxBytes   int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// pendingKey names a request by the direction it went and its id.
type pendingKey struct {
	outgoing bool
	id       string
}

type pending struct {
	method string
	at     time.Time
}

// Ring is one extension's wire tap. It implements jsonrpc.Observer and is
// safe for concurrent use.
type Ring struct {
	opts Options

	mu      sync.Mutex
	buf     []client.WireEntry // circular, MaxEntries long
	head, n int                // the oldest entry's index, and how many are held
	bytes   int
	seq     uint64
	pending map[pendingKey]pending
	// changed, made by a waiter, is closed (and forgotten) when an entry
	// is added, so a ring nobody waits on allocates nothing for it.
	changed chan struct{}
}

// New makes an empty ring.
func New(opts Options) *Ring {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = MaxEntries
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = MaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Ring{opts: opts, buf: make([]client.WireEntry, opts.MaxEntries), pending: make(map[pendingKey]pending)}
}

// Observe records one line; outgoing is host to extension.
func (r *Ring) Observe(outgoing bool, frame []byte) {
	frame = bytes.TrimRight(frame, "\r\n")
	now := r.opts.Now()
	e := client.WireEntry{Time: now, Size: len(frame), Direction: client.WireFromExtension, Kind: client.WireOther}
	if outgoing {
		e.Direction = client.WireToExtension
	}
	text := frame
	v, err := jsonrpc2.ScanMessageView(frame)
	if err == nil {
		e.ID = string(v.IDRaw)
		switch v.Kind {
		case jsonrpc2.MessageViewCall:
			e.Kind = client.WireRequest
		case jsonrpc2.MessageViewNotification:
			e.Kind = client.WireNotification
		case jsonrpc2.MessageViewResponseResult:
			e.Kind = client.WireAnswer
		case jsonrpc2.MessageViewResponseError:
			e.Kind = client.WireError
		}
		if v.Kind == jsonrpc2.MessageViewCall || v.Kind == jsonrpc2.MessageViewNotification {
			if m, ok := v.MethodString(); ok {
				e.Method = m
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case client.WireRequest:
		if len(r.pending) >= maxPending {
			// A peer that never answers must not grow the map: forget
			// one request (its answer, if it comes, shows no latency).
			for k := range r.pending {
				delete(r.pending, k)
				break
			}
		}
		r.pending[pendingKey{outgoing, e.ID}] = pending{method: e.Method, at: now}
	case client.WireAnswer, client.WireError:
		k := pendingKey{!outgoing, e.ID}
		if p, ok := r.pending[k]; ok {
			delete(r.pending, k)
			e.Method = p.method
			e.LatencyMicros = max(now.Sub(p.at).Microseconds(), 1)
		}
		if e.Kind == client.WireAnswer && e.Method == protocol.MethodSecretResolve {
			// The answer carries a secret's value: keep only its shape.
			text = []byte(`{"jsonrpc":"2.0","id":` + e.ID + `,"result":` + RedactedResult + `}`)
			e.Redacted = true
		}
	}
	if len(text) > MaxMessageText {
		text, e.Cut = text[:MaxMessageText], true
	}
	e.Message = string(text)
	r.seq++
	e.Seq = r.seq
	size := entrySize(&e)
	for r.n == len(r.buf) || (r.n > 0 && r.bytes+size > r.opts.MaxBytes) {
		r.dropOldest()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += size
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

func (r *Ring) dropOldest() {
	r.bytes -= entrySize(&r.buf[r.head])
	r.buf[r.head] = client.WireEntry{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// at is the i-th held entry, oldest first.
func (r *Ring) at(i int) *client.WireEntry { return &r.buf[(r.head+i)%len(r.buf)] }

func entrySize(e *client.WireEntry) int {
	return len(e.Message) + len(e.Method) + len(e.ID) + entryOverhead
}

// Page returns the entries after after, at most limit of them (0 or over
// client.MaxWirePage: that bound) and within protocol.PageBudget's bytes.
func (r *Ring) Page(after uint64, limit int) client.WirePage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pageLocked(after, limit)
}

func (r *Ring) pageLocked(after uint64, limit int) client.WirePage {
	p := client.WirePage{Entries: []client.WireEntry{}, Next: after, Oldest: r.seq + 1, Latest: r.seq}
	if r.n == 0 {
		return p
	}
	p.Oldest = r.at(0).Seq
	budget := protocol.NewPageBudget(limit, client.MaxWirePage)
	// Sequence numbers are consecutive, so the first entry after after is
	// found by arithmetic.
	start := 0
	if after >= p.Oldest {
		start = int(min(after-p.Oldest+1, uint64(r.n)))
	}
	for i := start; i < r.n; i++ {
		e := r.at(i)
		if !budget.Add(entrySize(e)) {
			p.More = true
			break
		}
		p.Entries = append(p.Entries, *e)
		p.Next = e.Seq
	}
	return p
}

// Wait is Page, waiting up to wait for an entry after after when none is
// held yet; ctx ends the wait early.
func (r *Ring) Wait(ctx context.Context, after uint64, limit int, wait time.Duration) client.WirePage {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		r.mu.Lock()
		p := r.pageLocked(after, limit)
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		if len(p.Entries) > 0 || wait <= 0 {
			return p
		}
		select {
		case <-changed:
		case <-timer.C:
			return r.Page(after, limit)
		case <-ctx.Done():
			return p
		}
	}
}
