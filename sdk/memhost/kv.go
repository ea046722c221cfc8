package memhost

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

func (h *Host) get(_ context.Context, p protocol.KVGetParams) (protocol.KVGetResult, error) {
	if err := h.rules.CheckNamespace(p.Namespace); err != nil {
		return protocol.KVGetResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.kv[p.Namespace][p.Key]
	if !ok {
		return protocol.KVGetResult{}, nil
	}
	return protocol.KVGetResult{Found: true, Value: bytes.Clone(v), Version: digest.KVVersion(v)}, nil
}

// list pages keys strictly after After, as the daemon's store does: the
// empty key is read with kv.get but never listed, and a page stops at its
// count or its bytes (protocol.PageBudget), whichever comes first.
func (h *Host) list(_ context.Context, p protocol.KVListParams) (protocol.KVListResult, error) {
	if err := h.rules.CheckNamespace(p.Namespace); err != nil {
		return protocol.KVListResult{}, err
	}
	page := protocol.NewPageBudget(p.Limit, protocol.KVMaxList)
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
	for _, k := range keys {
		v := h.kv[p.Namespace][k]
		if !page.Add(protocol.KVItemSize(k, len(v))) {
			res.More = true
			break
		}
		res.Items = append(res.Items, protocol.KVItem{Key: k, Value: bytes.Clone(v), Version: digest.KVVersion(v)})
	}
	return res, nil
}

// commit applies a batch under the host's rules (protocol.KVRules.Commit)
// through a transaction staged beside the maps, which joins them only when
// the whole batch is accepted.
func (h *Host) commit(_ context.Context, p protocol.KVCommitParams) (protocol.KVCommitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tx := h.begin()
	res, err := h.rules.Commit(tx, p)
	if err != nil {
		return protocol.KVCommitResult{}, err
	}
	tx.apply()
	h.commits = append(h.commits, p)
	return res, nil
}

type kvKey struct{ ns, key string }

// staged is a write a transaction holds: a value, or a deletion.
type staged struct {
	value   []byte
	deleted bool
}

// memTx is one kv.commit batch against the host, as protocol.KVTx. It reads
// its own writes; h.mu is held for its whole life.
type memTx struct {
	h      *Host
	staged map[kvKey]staged
	events []protocol.Event
}

func (tx *memTx) KVVersion(ns, key string) (string, bool, error) {
	if st, ok := tx.staged[kvKey{ns, key}]; ok {
		if st.deleted {
			return "", false, nil
		}
		return digest.KVVersion(st.value), true, nil
	}
	v, ok := tx.h.kv[ns][key]
	if !ok {
		return "", false, nil
	}
	return digest.KVVersion(v), true, nil
}

func (tx *memTx) KVPut(ns, key string, value []byte) (string, error) {
	tx.staged[kvKey{ns, key}] = staged{value: bytes.Clone(value)}
	return digest.KVVersion(value), nil
}

func (tx *memTx) KVDelete(ns, key string) error {
	tx.staged[kvKey{ns, key}] = staged{deleted: true}
	return nil
}

// event finds an accepted Event, the transaction's own included.
func (tx *memTx) event(id string) (protocol.Event, bool) {
	if i, ok := tx.h.eventIndex[id]; ok {
		return tx.h.events[i], true
	}
	for _, ev := range tx.events {
		if ev.ID == id {
			return ev, true
		}
	}
	return protocol.Event{}, false
}

// Emit accepts an Event as the daemon's log does: one per source and
// delivery ID, named digest.EmittedEventID, its parent an accepted Event
// of the same scope.
func (tx *memTx) Emit(e protocol.Emission) (string, bool, error) {
	ev, added, err := tx.accept(e)
	return ev.ID, added, err
}

// accept adds an Event to the transaction under the log's rules alone, as
// the daemon's store does: a repeat of a source and delivery ID is the
// Event already there, whatever its parent.
func (tx *memTx) accept(e protocol.Emission) (protocol.Event, bool, error) {
	switch {
	case e.Source == "":
		return protocol.Event{}, false, protocol.Errorf(protocol.ErrInvalid, "an event needs a source")
	case e.DeliveryID == "":
		return protocol.Event{}, false, protocol.Errorf(protocol.ErrInvalid, "event from %s needs a delivery_id", e.Source)
	case e.Type == "":
		return protocol.Event{}, false, protocol.Errorf(protocol.ErrInvalid, "event %s/%s needs a type", e.Source, e.DeliveryID)
	}
	id := digest.EmittedEventID(e.Source, e.DeliveryID)
	if old, found := tx.event(id); found {
		return old, false, nil
	}
	ev := protocol.Event{
		ID: id, Sequence: uint64(len(tx.h.events) + len(tx.events) + 1), Scope: e.Scope, Source: e.Source, Type: e.Type,
		DeliveryID: e.DeliveryID, Root: id, Time: time.Now().UTC(), Payload: e.Payload,
	}
	if e.Parent != "" {
		parent, found := tx.event(e.Parent)
		if !found || parent.Scope != e.Scope {
			return protocol.Event{}, false, protocol.Errorf(protocol.ErrNotFound,
				"parent %q of event %s/%s is not an accepted event of scope %q", e.Parent, e.Source, e.DeliveryID, e.Scope)
		}
		ev.Parent, ev.Root, ev.Depth = parent.ID, parent.Root, parent.Depth+1
	}
	tx.events = append(tx.events, ev)
	return ev, true, nil
}

// begin starts a transaction; h.mu is held until it is applied or
// dropped.
func (h *Host) begin() *memTx { return &memTx{h: h, staged: map[kvKey]staged{}} }

// apply joins the transaction's writes and Events to the host's.
func (tx *memTx) apply() {
	for k, st := range tx.staged {
		if st.deleted {
			delete(tx.h.kv[k.ns], k.key)
		} else {
			tx.h.put(k.ns, k.key, st.value)
		}
	}
	for _, ev := range tx.events {
		tx.h.eventIndex[ev.ID] = len(tx.h.events)
		tx.h.events = append(tx.h.events, ev)
	}
}
