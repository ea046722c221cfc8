package pebblekv

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Work states. A Work is open while pending, running or waiting: only open
// Work holds its keys, so only open Work is joined by a later match.
const (
	WorkPending   = "pending"
	WorkRunning   = "running"
	WorkWaiting   = "waiting"
	WorkCompleted = "completed"
	WorkFailed    = "failed"
	WorkCancelled = "cancelled"
)

// WorkOpen reports whether a Work in state is open: pending, running or
// waiting.
func WorkOpen(state string) bool {
	return state == WorkPending || state == WorkRunning || state == WorkWaiting
}

// workStates are the states a Work record may hold.
var workStates = []string{WorkPending, WorkRunning, WorkWaiting, WorkCompleted, WorkFailed, WorkCancelled}

// MaxWorks is the largest page Works returns.
const MaxWorks = 1000

// Work is one unit of work the router created from Events.
type Work struct {
	// ID is NewWorkID's: "w_" then 26 base32 characters.
	ID    string `json:"id"`
	Scope string `json:"scope_id"`
	// Kind is a declared Work kind, or "manual".
	Kind string `json:"kind"`
	// Keys are correlation keys, local to Scope: while the Work is open, a
	// match naming one of them joins it.
	Keys    []string          `json:"keys,omitempty"`
	State   string            `json:"state"`
	Display *protocol.Display `json:"display,omitempty"`
	// Binding is the binding of the route that created the Work.
	Binding string         `json:"binding,omitempty"`
	Context jsontext.Value `json:"context,omitzero"`
	Grants  []string       `json:"grants,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	// Inputs are the IDs of the latest Events routed to the Work, oldest
	// first: at most WorkTail of them. Inputs only grow: a writer appends
	// new ones to what it read, and PutWork numbers them in the input index
	// (WorkInputs), links them to the Work (WorkEventsPage) and keeps the
	// last WorkTail in the record.
	Inputs []string `json:"inputs,omitempty"`
	// InputCount is how many Events were routed to the Work in all. The
	// store keeps it: PutWork sets it from the inputs it adds, whatever the
	// caller's says.
	InputCount int `json:"input_count,omitzero"`
	// Trigger is the trigger input's Event ID: the first input unless the
	// kind's work_kind.trigger chose another.
	Trigger string `json:"trigger,omitempty"`
	// Reason says why the state is what it is (who cancelled it, and why).
	Reason string `json:"reason,omitempty"`
	// Hold is the start gate's hold on a pending Work: while it holds, no
	// attempt starts. Settled, it says how, so a repeated settle is
	// answered alike.
	Hold *protocol.WorkHold `json:"hold,omitempty"`
	// Admitted says the start gates let the Work's first attempt through
	// (or its hold was settled admitting it): they are not asked again.
	Admitted bool `json:"admitted,omitzero"`
}

// Open reports whether w is open: pending, running or waiting.
func (w Work) Open() bool { return WorkOpen(w.State) }

// NewWorkID returns a new Work ID: "w_" and 26 base32 characters, the first
// ten the creation time in milliseconds and the rest 80 random bits, so
// listing Work in ID order lists it about in creation order.
func NewWorkID() string { return timeID("w_") }

// Keys of Work records and their indexes (see the package doc's table).
func workRecKey(id string) []byte { return famKey(famWorkRec, id) }
func workStateKey(state, id string) []byte {
	return famKey(famWorkByState, id, state)
}
func workScopeKey(scope, id string) []byte { return famKey(famWorkByScope, id, scope) }
func workScopedKey(scope, state, id string) []byte {
	return famKey(famWorkScoped, id, scope, state)
}
func workOpenKey(scope, key string) []byte { return famKey(famWorkOpenKey, key, scope) }
func workKeyKindKey(scope, key, kind, id string) []byte {
	return famKey(famWorkKeyKind, id, scope, key, kind)
}

// indexKeys are the index entries of w, each with its value.
func (w Work) indexKeys() [][2][]byte {
	out := [][2][]byte{
		{workStateKey(w.State, w.ID), nil},
		{workScopeKey(w.Scope, w.ID), nil},
		{workScopedKey(w.Scope, w.State, w.ID), nil},
	}
	for _, k := range w.Keys {
		out = append(out, [2][]byte{workKeyKindKey(w.Scope, k, w.Kind, w.ID), nil})
		if w.Open() {
			out = append(out, [2][]byte{workOpenKey(w.Scope, k), []byte(w.ID)})
		}
	}
	return out
}

// check refuses a Work record the store cannot index or answer.
func (w Work) check() error {
	switch {
	case w.ID == "":
		return protocol.Errorf(protocol.ErrInvalid, "a Work needs an ID (NewWorkID)")
	case w.Scope == "":
		return protocol.Errorf(protocol.ErrInvalid, "Work %s needs a scope", w.ID)
	case w.Kind == "":
		return protocol.Errorf(protocol.ErrInvalid, "Work %s needs a kind", w.ID)
	case !slices.Contains(workStates, w.State):
		return protocol.Errorf(protocol.ErrInvalid, "Work %s has state %q; use pending, running, waiting, completed, failed or cancelled", w.ID, w.State)
	}
	for i, k := range w.Keys {
		if k == "" {
			return protocol.Errorf(protocol.ErrInvalid, "Work %s has an empty key", w.ID)
		}
		if slices.Contains(w.Keys[:i], k) {
			return protocol.Errorf(protocol.ErrInvalid, "Work %s names key %q twice", w.ID, k)
		}
	}
	if w.Display != nil {
		if err := w.Display.Check(); err != nil {
			return err
		}
	}
	return nil
}

// PutWork writes w and its indexes (by state, by scope, by scope and state,
// open Work by key, Work by key and kind), removing the entries of the
// record it replaces, so no index names a state or key w no longer has.
// The inputs w has past the stored record's Inputs are new: each is
// numbered in the input index and linked to the Work (LinkWork), and the
// record keeps InputCount and the last WorkTail inputs. A record stored
// with every input (before the input index) has them moved into the index
// first. All of it is part of tx's one batch.
//
// # Refusals
//
// A Work without an ID, a scope or a kind, in an unknown state, with an
// empty or repeated key, or with a display that breaks a limit is
// protocol.ErrInvalid; so is one that changes the stored Work's scope,
// drops inputs it had (its Inputs do not begin with the stored ones), or
// names an input twice or one the Work already has. An open Work holding a
// key another open Work of the scope holds is protocol.ErrConflict: one
// key reaches one open Work. An input that is not an accepted Event of the
// Work's scope is protocol.ErrNotFound. A refusal writes nothing.
func (tx *Tx) PutWork(w Work) error {
	_, err := tx.putWork(w)
	return err
}

// putWork is PutWork, returning the record as stored.
func (tx *Tx) putWork(w Work) (Work, error) {
	old, had, err := tx.storedWork(w.ID)
	if err != nil {
		return Work{}, err
	}
	return tx.putWorkOver(w, old, had)
}

// putWorkOver is putWork of w over old, its record as stored (had false
// when there is none).
func (tx *Tx) putWorkOver(w, old Work, had bool) (Work, error) {
	if err := w.check(); err != nil {
		return Work{}, err
	}
	if had && old.Scope != w.Scope {
		return Work{}, protocol.Errorf(protocol.ErrInvalid, "Work %s is of scope %q; a Work never moves to another scope", w.ID, old.Scope)
	}
	if err := tx.checkKeysFree(w); err != nil {
		return Work{}, err
	}
	added, err := tx.inputsAdded(w, old, had)
	if err != nil {
		return Work{}, err
	}
	if err := tx.checkInputEvents(w, added); err != nil {
		return Work{}, err
	}
	count := old.bounded().InputCount
	w.InputCount, w.Inputs = count+len(added), tail(w.Inputs)
	raw, err := json.Marshal(w)
	if err != nil {
		return Work{}, protocol.Errorf(protocol.ErrInvalid, "Work %s cannot be encoded (its context must be valid JSON): %v", w.ID, err)
	}
	if len(raw) > protocol.MaxPageBytes {
		return Work{}, protocol.Errorf(protocol.ErrTooLarge, "Work %s is %d bytes encoded; keep its context within %d", w.ID, len(raw), protocol.MaxPageBytes)
	}
	if err := tx.writeWork(w, old, had, raw); err != nil {
		return Work{}, err
	}
	if err := tx.writeInputs(w.ID, old.legacyInputs(), count, added); err != nil {
		return Work{}, err
	}
	for _, id := range added {
		if err := tx.LinkWork(id, w.ID); err != nil {
			return Work{}, err
		}
	}
	return w, nil
}

// checkKeysFree refuses an open Work holding a key another open Work of
// its scope holds.
func (tx *Tx) checkKeysFree(w Work) error {
	if w.Open() {
		for _, k := range w.Keys {
			holder, found, err := tx.get(workOpenKey(w.Scope, k))
			if err != nil {
				return err
			}
			if found && string(holder) != w.ID {
				return protocol.Errorf(protocol.ErrConflict, "key %q of scope %q is held by open Work %s; join it or close it first", k, w.Scope, holder)
			}
		}
	}
	return nil
}

// checkInputEvents refuses an added input that is not an accepted Event of
// the Work's scope.
func (tx *Tx) checkInputEvents(w Work, added []string) error {
	for _, id := range added {
		ev, found, err := tx.Event(id)
		if err != nil {
			return err
		}
		if !found || ev.Scope != w.Scope {
			return protocol.Errorf(protocol.ErrNotFound, "input %q of Work %s is not an accepted event of scope %q", id, w.ID, w.Scope)
		}
	}
	return nil
}

// writeWork writes w's record (raw) and its indexes, removing those of the
// record it replaces.
func (tx *Tx) writeWork(w, old Work, had bool, raw []byte) error {
	if had {
		for _, e := range old.indexKeys() {
			if err := tx.delete(e[0]); err != nil {
				return err
			}
		}
	}
	for _, e := range append(w.indexKeys(), [2][]byte{workRecKey(w.ID), raw}) {
		if err := tx.set(e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}

// AddWorkInput routes an accepted Event of the Work's scope to the Work:
// it appends it to Inputs (the first input also becomes the Trigger when
// none is set), numbers and links it and writes the Work (PutWork), and
// returns the Work as stored. Adding an input again changes nothing, and
// costs one point read however many inputs the Work has. An unknown Work
// is protocol.ErrNotFound.
func (tx *Tx) AddWorkInput(workID, eventID string) (Work, error) {
	old, found, err := tx.storedWork(workID)
	if err != nil {
		return Work{}, err
	}
	if !found {
		return Work{}, protocol.Errorf(protocol.ErrNotFound, "Work %q does not exist", workID)
	}
	w := old.bounded()
	if dup, err := tx.isInput(old, eventID); err != nil || dup {
		return w, err
	}
	w.Inputs = append(slices.Clone(w.Inputs), eventID)
	if w.Trigger == "" {
		w.Trigger = eventID
	}
	return tx.putWorkOver(w, old, true)
}

// Work reads one Work by ID, with its InputCount and its latest inputs
// (at most WorkTail) whatever layout it was stored in; found false means
// there is none.
func (r *Reader) Work(id string) (w Work, found bool, err error) {
	w, found, err = r.storedWork(id)
	return w.bounded(), found, err
}

func decodeWork(id string, raw []byte) (Work, error) {
	var w Work
	if err := json.Unmarshal(raw, &w); err != nil {
		return Work{}, fmt.Errorf("pebblekv: decode Work %s: %w", id, err)
	}
	return w, nil
}

// WorkByKey reads the open Work of scope holding key; found false means no
// open Work holds it (a completed, failed or cancelled Work never does).
func (r *Reader) WorkByKey(scope, key string) (w Work, found bool, err error) {
	id, found, err := r.get(workOpenKey(scope, key))
	if err != nil || !found {
		return Work{}, false, err
	}
	w, found, err = r.Work(string(id))
	if err == nil && !found {
		err = fmt.Errorf("pebblekv: key %q of scope %q names Work %s, which does not exist", key, scope, id)
	}
	return w, err == nil, err
}

// WorkOfKind reads a Work of kind in scope that holds key, in any state,
// open or not; found false means no Work of kind ever held it (among the
// Works kept). Run-once kinds ask it before creating a second.
func (r *Reader) WorkOfKind(scope, key, kind string) (w Work, found bool, err error) {
	prefix := famKey(famWorkKeyKind, "", scope, key, kind)
	var id string
	err = r.scan(prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		id = string(k[len(prefix):])
		return false, nil
	})
	if err != nil || id == "" {
		return Work{}, false, err
	}
	w, found, err = r.Work(id)
	if err == nil && !found {
		err = fmt.Errorf("pebblekv: key %q of scope %q names Work %s of kind %s, which does not exist", key, scope, id, kind)
	}
	return w, err == nil, err
}

// WorkQuery selects a page of Work. Empty Scope or State selects every
// one.
type WorkQuery struct {
	Scope string
	State string
	// After is the last ID of the page before: the page holds the Work
	// past it, in the listing's order.
	After string
	// Limit caps the page's Work; <= 0 or over MaxWorks is MaxWorks.
	Limit int
	// Newest lists in descending ID order (newest first) instead of
	// ascending.
	Newest bool
}

// Works reads one page of Work in ID order (about creation order, see
// NewWorkID), from the index q's fields select: at most q.Limit, and, past
// the first, at most protocol.MaxPageBytes of them as they encode. more
// says another Work follows the page.
func (r *Reader) Works(q WorkQuery) (ws []Work, more bool, err error) {
	if q.State != "" && !slices.Contains(workStates, q.State) {
		return nil, false, protocol.Errorf(protocol.ErrInvalid, "state %q is not a Work state; use pending, running, waiting, completed, failed or cancelled", q.State)
	}
	var prefix []byte
	switch {
	case q.Scope != "" && q.State != "":
		prefix = famKey(famWorkScoped, "", q.Scope, q.State)
	case q.Scope != "":
		prefix = famKey(famWorkByScope, "", q.Scope)
	case q.State != "":
		prefix = famKey(famWorkByState, "", q.State)
	default:
		prefix = []byte{famWorkRec}
	}
	page := protocol.NewPageBudget(q.Limit, MaxWorks)
	ws = []Work{}
	err = r.scanIDs(prefix, q.After, q.Newest, func(id string, v []byte) (bool, error) {
		if page.Full() {
			more = true
			return false, nil
		}
		raw := v
		if prefix[0] != famWorkRec {
			var found bool
			if raw, found, err = r.get(workRecKey(id)); err != nil {
				return false, err
			} else if !found {
				return false, fmt.Errorf("pebblekv: a Work index names Work %s, which does not exist", id)
			}
		}
		if !page.Add(len(raw) + 1) {
			more = true
			return false, nil
		}
		w, err := decodeWork(id, raw)
		if err != nil {
			return false, err
		}
		ws = append(ws, w.bounded())
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return ws, more, nil
}

// scanIDs calls fn with each key under prefix whose rest (an ID) sorts
// after after (before it when desc), in ID order (descending when desc),
// until fn returns false or an error. v is valid only during the call.
func (r *Reader) scanIDs(prefix []byte, after string, desc bool, fn func(id string, v []byte) (bool, error)) error {
	if err := r.live(); err != nil {
		return err
	}
	lower, upper := prefix, prefixEnd(prefix)
	if after != "" && desc {
		upper = append(clone(prefix), after...)
	} else if after != "" {
		lower = append(append(clone(prefix), after...), 0)
	}
	it, err := r.src.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebblekv: iterate: %w", err)
	}
	first, next := it.First, it.Next
	if desc {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		v, err := it.ValueAndErr()
		if err == nil {
			var more bool
			more, err = fn(string(it.Key()[len(prefix):]), v)
			if err == nil && !more {
				break
			}
		}
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebblekv: iterate: %w", err)
	}
	return nil
}
