package pebblekv

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// MaxEvents is the largest page Events, ScopeEvents and WorkEvents return.
const MaxEvents = 1000

// Event is one accepted Event of the log.
type Event struct {
	// ID is digest.EmittedEventID(Source, DeliveryID).
	ID string `json:"id"`
	// Seq is the Event's place in the log: 1 for the first, then increasing
	// by one per accepted Event.
	Seq uint64 `json:"seq"`
	// Scope is the scope the Event was accepted into; "" is none.
	Scope      string `json:"scope,omitempty"`
	Source     string `json:"source"`
	Type       string `json:"type"`
	DeliveryID string `json:"delivery_id"`
	// Parent is the Event this one derives from; "" for a root.
	Parent string `json:"parent,omitempty"`
	// Root is the first Event of the causal chain: the Event's own ID for a
	// root.
	Root string `json:"root"`
	// Depth is 0 for a root and the parent's depth plus one otherwise.
	Depth int `json:"depth,omitzero"`
	// Time is when the Event happened (UTC); per-minute limits count by it.
	Time    time.Time        `json:"time"`
	Payload protocol.Payload `json:"payload"`
	// Works are the Works the Event names or is routed to, in the order they
	// were linked.
	Works []string `json:"works,omitempty"`
}

// EventInput is an Event to accept. The store assigns ID, Seq, Root and
// Depth.
type EventInput struct {
	Scope      string
	Source     string
	Type       string
	DeliveryID string
	// Parent, when set, is the ID of an accepted Event of the same Scope.
	Parent  string
	Payload protocol.Payload
	Works   []string
	// Time defaults to now.
	Time time.Time
}

// Limits are a causal chain's bounds. A zero field is no limit.
type Limits struct {
	// MaxDepth is the deepest a derived Event may be.
	MaxDepth int
	// PerMinute is how many Events may be derived in one chain (one root)
	// in one calendar minute of their Time.
	PerMinute int
}

// Accept adds an Event to the log, unless (Source, DeliveryID) is already
// there: then it returns that Event, added false, and writes nothing.
//
// # Causation
//
// A Parent must be an accepted Event of the same Scope, else
// protocol.ErrNotFound (the same answer for both, so Accept is no oracle for
// other scopes' Events). Root and Depth derive from it. When lim sets them, a
// Depth over MaxDepth, or a derived Event past PerMinute in its chain's
// minute, is protocol.ErrCausalLimit.
//
// # Atomicity
//
// Accept checks everything before it writes, so a refusal (a protocol error:
// invalid input, a parent not found, a causal limit) leaves tx as it was, and
// the caller may go on with the rest of its transaction. The Event commits
// with the rest of the Update.
func (tx *Tx) Accept(in EventInput, lim Limits) (ev Event, added bool, err error) {
	if err := tx.live(); err != nil {
		return Event{}, false, err
	}
	switch {
	case in.Source == "":
		return Event{}, false, protocol.Errorf(protocol.ErrInvalid, "an event needs a source")
	case in.DeliveryID == "":
		return Event{}, false, protocol.Errorf(protocol.ErrInvalid, "event from %s needs a delivery_id", in.Source)
	case in.Type == "":
		return Event{}, false, protocol.Errorf(protocol.ErrInvalid, "event %s/%s needs a type", in.Source, in.DeliveryID)
	}
	id := digest.EmittedEventID(in.Source, in.DeliveryID)
	if old, found, err := tx.Event(id); err != nil || found {
		return old, false, err
	}
	ev = Event{
		ID: id, Scope: in.Scope, Source: in.Source, Type: in.Type, DeliveryID: in.DeliveryID,
		Root: id, Time: in.Time.UTC(), Payload: in.Payload,
	}
	if in.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	var counter []byte
	var count uint64
	if in.Parent != "" {
		p, found, err := tx.Event(in.Parent)
		if err != nil {
			return Event{}, false, err
		}
		if !found || p.Scope != in.Scope {
			return Event{}, false, protocol.Errorf(protocol.ErrNotFound,
				"parent %q of event %s/%s is not an accepted event of scope %q", in.Parent, in.Source, in.DeliveryID, in.Scope)
		}
		ev.Parent, ev.Root, ev.Depth = p.ID, p.Root, p.Depth+1
		if lim.MaxDepth > 0 && ev.Depth > lim.MaxDepth {
			return Event{}, false, protocol.Errorf(protocol.ErrCausalLimit,
				"event %s/%s would be %d deep in chain %s; the limit is %d", in.Source, in.DeliveryID, ev.Depth, ev.Root, lim.MaxDepth)
		}
		counter = causalKey(ev.Root, ev.Time)
		v, found, err := tx.get(counter)
		if err != nil {
			return Event{}, false, err
		}
		if found && len(v) == 8 {
			count = binary.BigEndian.Uint64(v)
		}
		if lim.PerMinute > 0 && count >= uint64(lim.PerMinute) {
			return Event{}, false, protocol.Errorf(protocol.ErrCausalLimit,
				"chain %s already derived %d events in the minute of %s; the limit is %d", ev.Root, count, ev.Time.Format(time.RFC3339), lim.PerMinute)
		}
	}
	for _, w := range in.Works {
		if w == "" {
			return Event{}, false, protocol.Errorf(protocol.ErrInvalid, "event %s/%s names an empty Work ID", in.Source, in.DeliveryID)
		}
		if !slices.Contains(ev.Works, w) {
			ev.Works = append(ev.Works, w)
		}
	}
	if !tx.seqLoaded {
		if tx.seq, err = tx.LatestSequence(); err != nil {
			return Event{}, false, err
		}
		tx.seqLoaded = true
	}
	ev.Seq = tx.seq
	if ev.Seq == math.MaxUint64 {
		return Event{}, false, fmt.Errorf("pebblekv: the event log is full")
	}
	ev.Seq++
	if err := tx.writeEvent(ev); err != nil {
		return Event{}, false, err
	}
	seq := appendSeq(nil, ev.Seq)
	writes := [][2][]byte{
		{idKey(ev.ID), seq},
		{indexKey(famScope, ev.Scope, ev.Seq), nil},
		{metaSeq, seq},
	}
	for _, w := range ev.Works {
		writes = append(writes, [2][]byte{indexKey(famWork, w, ev.Seq), nil})
	}
	if counter != nil {
		writes = append(writes, [2][]byte{counter, binary.BigEndian.AppendUint64(nil, count+1)})
	}
	for _, w := range writes {
		if err := tx.set(w[0], w[1]); err != nil {
			return Event{}, false, err
		}
	}
	tx.seq = ev.Seq
	return ev, true, nil
}

// writeEvent writes ev's log record.
func (tx *Tx) writeEvent(ev Event) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("pebblekv: encode event %s: %w", ev.ID, err)
	}
	return tx.set(eventKey(ev.Seq), raw)
}

// LinkWork adds an accepted Event to a Work's index and to the Event's
// Works. Linking it again is not an error. An unknown event is
// protocol.ErrNotFound.
func (tx *Tx) LinkWork(eventID, workID string) error {
	if workID == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a Work ID is required to link event %s", eventID)
	}
	ev, found, err := tx.Event(eventID)
	if err != nil {
		return err
	}
	if !found {
		return protocol.Errorf(protocol.ErrNotFound, "event %q is not in the log", eventID)
	}
	if slices.Contains(ev.Works, workID) {
		return nil
	}
	ev.Works = append(ev.Works, workID)
	if err := tx.writeEvent(ev); err != nil {
		return err
	}
	return tx.set(indexKey(famWork, workID, ev.Seq), nil)
}

// Event reads one Event by ID; found false means it is not in the log.
func (r *Reader) Event(id string) (ev Event, found bool, err error) {
	v, found, err := r.get(idKey(id))
	if err != nil || !found {
		return Event{}, false, err
	}
	if len(v) != 8 {
		return Event{}, false, fmt.Errorf("pebblekv: ID index entry of %s is %d bytes, not 8", id, len(v))
	}
	seq := binary.BigEndian.Uint64(v)
	raw, found, err := r.get(eventKey(seq))
	if err != nil {
		return Event{}, false, err
	}
	if !found {
		return Event{}, false, fmt.Errorf("pebblekv: ID index names event %d for %s, which is not in the log", seq, id)
	}
	ev, err = decodeEvent(seq, raw)
	return ev, err == nil, err
}

// EventByDelivery reads the Event accepted for (source, deliveryID).
func (r *Reader) EventByDelivery(source, deliveryID string) (Event, bool, error) {
	return r.Event(digest.EmittedEventID(source, deliveryID))
}

// LatestSequence is the last accepted Event's sequence; 0 for an empty log.
func (r *Reader) LatestSequence() (uint64, error) {
	v, found, err := r.get(metaSeq)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("pebblekv: latest sequence is %d bytes, not 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Events reads the whole log in sequence order: the Events after sequence
// after, one page of them (see EventsPage). It is for operators; an
// extension's reads go through ScopeEvents. Read on after the last Event's
// sequence until a page comes back empty.
func (r *Reader) Events(after uint64, limit int) ([]Event, error) {
	out, _, err := r.EventsPage(after, limit)
	return out, err
}

// EventsPage reads one page of the whole log in sequence order: the Events
// after sequence after, at most limit (limit <= 0 or over MaxEvents means
// MaxEvents), and, past the first, at most protocol.MaxPageBytes of them as
// an answer encodes them (protocol.PageBudget). more says another Event
// follows the page.
func (r *Reader) EventsPage(after uint64, limit int) (events []Event, more bool, err error) {
	page := protocol.NewPageBudget(limit, MaxEvents)
	out := []Event{}
	if after == math.MaxUint64 {
		return out, false, nil
	}
	err = r.scan(eventKey(after+1), prefixEnd([]byte{famEvent}), func(k, v []byte) (bool, error) {
		if page.Full() {
			more = true
			return false, nil
		}
		seq, err := seqSuffix(k)
		if err != nil {
			return false, err
		}
		ev, err := decodeEvent(seq, v)
		if err != nil {
			return false, err
		}
		if !page.Add(ev.Wire().WireSize()) {
			more = true
			return false, nil
		}
		out = append(out, ev)
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// ScopeEvents reads the Events accepted into any of scopes ("" is the Events
// with no scope), merged in sequence order: those after sequence after, one
// page of them (see ScopeEventsPage). Read on after the last Event's
// sequence until a page comes back empty.
func (r *Reader) ScopeEvents(scopes []string, after uint64, limit int) ([]Event, error) {
	out, _, err := r.ScopeEventsPage(scopes, after, limit)
	return out, err
}

// ScopeEventsPage reads one page of the Events accepted into any of scopes
// ("" is the Events with no scope), merged in sequence order: those after
// sequence after, at most limit (limit <= 0 or over MaxEvents means
// MaxEvents), and, past the first, at most protocol.MaxPageBytes of them as
// an answer encodes them. more says another Event of scopes follows the
// page. It reads the scope index, so a page costs the Events it returns,
// however many other scopes' Events the log holds between them.
func (r *Reader) ScopeEventsPage(scopes []string, after uint64, limit int) (events []Event, more bool, err error) {
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	prefixes := make([][]byte, len(scopes))
	for i, s := range scopes {
		prefixes[i] = indexPrefix(famScope, s)
	}
	return r.indexEvents(prefixes, after, protocol.NewPageBudget(limit, MaxEvents))
}

// WorkEvents reads a Work's Events (those linked to it), in sequence order:
// those after sequence after, one page of them (see WorkEventsPage).
func (r *Reader) WorkEvents(workID string, after uint64, limit int) ([]Event, error) {
	out, _, err := r.WorkEventsPage(workID, after, limit)
	return out, err
}

// WorkEventsPage reads one page of a Work's Events (those linked to it), in
// sequence order, from the Work index: those after sequence after, at most
// limit (limit <= 0 or over MaxEvents means MaxEvents), and, past the first,
// at most protocol.MaxPageBytes of them. more says another of the Work's
// Events follows the page.
func (r *Reader) WorkEventsPage(workID string, after uint64, limit int) (events []Event, more bool, err error) {
	return r.indexEvents([][]byte{indexPrefix(famWork, workID)}, after, protocol.NewPageBudget(limit, MaxEvents))
}

// indexEvents merges index ranges (each prefix followed by sequences) in
// sequence order and resolves the sequences after after to their Events
// until page is full. It reads at most page's count of index entries, plus
// one per prefix and one to learn whether more follow, and resolves one
// Event past a page its bytes fill.
func (r *Reader) indexEvents(prefixes [][]byte, after uint64, page protocol.PageBudget) ([]Event, bool, error) {
	if after == math.MaxUint64 || len(prefixes) == 0 {
		return []Event{}, false, nil
	}
	if err := r.live(); err != nil {
		return nil, false, err
	}
	var h seqHeap
	defer func() {
		for _, c := range h {
			_ = c.it.Close()
		}
	}()
	for _, p := range prefixes {
		it, err := r.src.NewIter(&pebble.IterOptions{LowerBound: appendSeq(clone(p), after+1), UpperBound: prefixEnd(p)})
		if err != nil {
			return nil, false, fmt.Errorf("pebblekv: iterate index: %w", err)
		}
		c := &cursor{it: it}
		if ok, err := c.load(it.First()); err != nil {
			_ = it.Close()
			return nil, false, err
		} else if !ok {
			_ = it.Close()
			continue
		}
		h = append(h, c)
	}
	heap.Init(&h)
	limit := page.Limit()
	seqs := make([]uint64, 0, min(limit, 64))
	for len(h) > 0 && len(seqs) < limit {
		c := h[0]
		seqs = append(seqs, c.seq)
		ok, err := c.load(c.it.Next())
		if err != nil {
			return nil, false, err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			_ = c.it.Close()
			heap.Pop(&h)
		}
	}
	out, cut, err := r.resolve(seqs, &page)
	return out, cut || len(h) > 0, err
}

// resolve reads the Events of seqs, which are increasing, through one
// iterator seeking forward, while page takes them; cut says it stopped
// before the last because the page was full.
func (r *Reader) resolve(seqs []uint64, page *protocol.PageBudget) (out []Event, cut bool, err error) {
	out = make([]Event, 0, len(seqs))
	if len(seqs) == 0 {
		return out, false, nil
	}
	upper := prefixEnd([]byte{famEvent})
	if last := seqs[len(seqs)-1]; last < math.MaxUint64 {
		upper = eventKey(last + 1)
	}
	it, err := r.src.NewIter(&pebble.IterOptions{LowerBound: eventKey(seqs[0]), UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("pebblekv: iterate log: %w", err)
	}
	defer it.Close()
	key := make([]byte, 0, 9)
	for _, seq := range seqs {
		key = appendSeq(append(key[:0], famEvent), seq)
		if !it.SeekGE(key) || string(it.Key()) != string(key) {
			if err := it.Error(); err != nil {
				return nil, false, fmt.Errorf("pebblekv: iterate log: %w", err)
			}
			return nil, false, fmt.Errorf("pebblekv: an index names event %d, which is not in the log", seq)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, fmt.Errorf("pebblekv: iterate log: %w", err)
		}
		ev, err := decodeEvent(seq, v)
		if err != nil {
			return nil, false, err
		}
		if !page.Add(ev.Wire().WireSize()) {
			return out, true, nil
		}
		out = append(out, ev)
	}
	return out, false, nil
}

func decodeEvent(seq uint64, raw []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Event{}, fmt.Errorf("pebblekv: decode event %d: %w", seq, err)
	}
	ev.Seq = seq
	return ev, nil
}

// cursor is one index range's iterator, positioned at seq.
type cursor struct {
	it  *pebble.Iterator
	seq uint64
}

// load reads the sequence at the iterator's position; ok false means the
// range is exhausted.
func (c *cursor) load(valid bool) (ok bool, err error) {
	if !valid {
		if err := c.it.Error(); err != nil {
			return false, fmt.Errorf("pebblekv: iterate index: %w", err)
		}
		return false, nil
	}
	c.seq, err = seqSuffix(c.it.Key())
	return err == nil, err
}

// seqHeap orders cursors by their current sequence.
type seqHeap []*cursor

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *seqHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Wire is the Event as the protocol carries it (state reads, event.accept
// answers, the management API).
func (e Event) Wire() protocol.Event {
	return protocol.Event{
		ID: e.ID, Sequence: e.Seq, Scope: e.Scope, Source: e.Source, Type: e.Type,
		DeliveryID: e.DeliveryID, Parent: e.Parent, Root: e.Root, Depth: e.Depth,
		Time: e.Time, Payload: e.Payload, Works: e.Works,
	}
}
