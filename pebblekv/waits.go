package pebblekv

import (
	"fmt"
	"slices"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Wait states.
const (
	// WaitActive: the Work waits; an Event routed to it or the due time
	// wakes it.
	WaitActive = "active"
	// WaitWoken: an Event or the due time woke it (Wake says which).
	WaitWoken = "woken"
	// WaitCancelled: its Work was cancelled while waiting.
	WaitCancelled = "cancelled"
)

var waitStates = []string{WaitActive, WaitWoken, WaitCancelled}

// MaxWaits is the largest page ActiveWaits and DueWaits return.
const MaxWaits = 1000

// Wait is what a waiting Work waits for: an Event routed to it, or its due
// time. A Work has at most one active Wait.
type Wait struct {
	// ID is NewWaitID's.
	ID        string `json:"id"`
	Work      string `json:"work_id"`
	Scope     string `json:"scope_id"`
	Execution string `json:"execution_id"`
	// Owner is the package whose wait operation declared it; "" for the
	// builtin wait.
	Owner string `json:"owner,omitempty"`
	// Description and Progress are one line each, within
	// protocol.MaxWaitDescription and protocol.MaxWaitProgress bytes:
	// PutWait cuts longer ones.
	Description string `json:"description,omitempty"`
	Progress    string `json:"progress,omitempty"`
	// Due is when the Wait wakes without an Event; zero for no timeout.
	Due     time.Time      `json:"due,omitzero"`
	State   string         `json:"state"`
	Wake    *protocol.Wake `json:"wake,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// Keys of Wait records and their indexes (see the package doc's table).
func waitRecKey(id string) []byte { return famKey(famWaitRec, id) }

func waitActiveKey(work string) []byte { return famKey(famWaitActive, work) }

func waitDueKey(due time.Time, id string) []byte {
	return append(appendTime(append(make([]byte, 0, 1+timeLen+len(id)), famWaitDue), due), id...)
}

// indexKeys are the index entries of w, each with its value: an active
// Wait by its Work, and by its due time when it has one.
func (w Wait) indexKeys() [][2][]byte {
	if w.State != WaitActive {
		return nil
	}
	out := [][2][]byte{{waitActiveKey(w.Work), []byte(w.ID)}}
	if !w.Due.IsZero() {
		out = append(out, [2][]byte{waitDueKey(w.Due, w.ID), nil})
	}
	return out
}

// check refuses a Wait the store cannot index.
func (w Wait) check() error {
	switch {
	case w.ID == "":
		return protocol.Errorf(protocol.ErrInvalid, "a Wait needs an ID (NewWaitID)")
	case w.Work == "" || w.Scope == "":
		return protocol.Errorf(protocol.ErrInvalid, "Wait %s needs its Work and scope", w.ID)
	case !slices.Contains(waitStates, w.State):
		return protocol.Errorf(protocol.ErrInvalid, "Wait %s has state %q; use active, woken or cancelled", w.ID, w.State)
	}
	return nil
}

// PutWait writes w and its indexes (the active Wait by Work; active Waits
// by due time), removing the entries of the record it replaces, in tx's
// one batch: a woken or cancelled Wait is in neither. Description and
// Progress are cut to their first line within protocol.MaxWaitDescription
// and protocol.MaxWaitProgress bytes, never refused.
//
// # Refusals
//
// A Wait without an ID, Work or scope, or in an unknown state, is
// protocol.ErrInvalid; so is one that changes the stored Wait's Work or
// scope. An active Wait of a Work that has another active Wait is
// protocol.ErrConflict: wake or cancel that one first. A refusal writes
// nothing.
func (tx *Tx) PutWait(w Wait) error {
	w.Description = protocol.CutLine(w.Description, protocol.MaxWaitDescription)
	w.Progress = protocol.CutLine(w.Progress, protocol.MaxWaitProgress)
	if !w.Due.IsZero() {
		w.Due = w.Due.UTC()
	}
	if err := w.check(); err != nil {
		return err
	}
	old, had, err := tx.Wait(w.ID)
	if err != nil {
		return err
	}
	if had && (old.Work != w.Work || old.Scope != w.Scope) {
		return protocol.Errorf(protocol.ErrInvalid, "Wait %s is Work %s's in scope %q; a Wait never moves", w.ID, old.Work, old.Scope)
	}
	if w.State == WaitActive {
		holder, found, err := tx.get(waitActiveKey(w.Work))
		if err != nil {
			return err
		}
		if found && string(holder) != w.ID {
			return protocol.Errorf(protocol.ErrConflict, "Work %s already waits on Wait %s; a Work has one active Wait, so wake or cancel it first", w.Work, holder)
		}
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return protocol.Errorf(protocol.ErrInvalid, "Wait %s cannot be encoded (its wake's Event must be valid JSON): %v", w.ID, err)
	}
	var stale [][2][]byte
	if had {
		stale = old.indexKeys()
	}
	return tx.rewrite(stale, append(w.indexKeys(), [2][]byte{waitRecKey(w.ID), raw}))
}

// Wait reads one Wait; found false means there is none.
func (r *Reader) Wait(id string) (w Wait, found bool, err error) {
	if id == "" {
		return Wait{}, false, nil
	}
	raw, found, err := r.get(waitRecKey(id))
	if err != nil || !found {
		return Wait{}, false, err
	}
	w, err = decodeWait(id, raw)
	return w, err == nil, err
}

func decodeWait(id string, raw []byte) (Wait, error) {
	var w Wait
	if err := json.Unmarshal(raw, &w); err != nil {
		return Wait{}, fmt.Errorf("pebblekv: decode Wait %s: %w", id, err)
	}
	return w, nil
}

// mustWait reads the Wait an index names; its absence is the store's
// fault, not the caller's.
func (r *Reader) mustWait(id, index string) (Wait, error) {
	w, found, err := r.Wait(id)
	if err == nil && !found {
		err = fmt.Errorf("pebblekv: the %s index names Wait %s, which does not exist", index, id)
	}
	return w, err
}

// ActiveWait is a Work's active Wait; found false means the Work waits on
// none.
func (r *Reader) ActiveWait(work string) (w Wait, found bool, err error) {
	if work == "" {
		return Wait{}, false, nil
	}
	id, found, err := r.get(waitActiveKey(work))
	if err != nil || !found {
		return Wait{}, false, err
	}
	w, err = r.mustWait(string(id), "active Wait")
	return w, err == nil, err
}

// ActiveWaits reads one page of the active Waits in the order of their
// Works' IDs (so about in the order the Works began): at most limit
// (<= 0 or over MaxWaits is MaxWaits), and, past the first, at most
// protocol.MaxPageBytes of them as they encode. after is the ID of the
// last Wait of the page before ("" for the first page), whatever became
// of it since; an unknown one is protocol.ErrInvalid. more says another
// active Wait follows the page. It costs what it returns, however many
// Waits ended before.
func (r *Reader) ActiveWaits(after string, limit int) (ws []Wait, more bool, err error) {
	var cursor string
	if after != "" {
		last, found, err := r.Wait(after)
		if err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, protocol.Errorf(protocol.ErrInvalid, "there is no Wait %q to page after; pass the last Wait of the page before", after)
		}
		cursor = last.Work
	}
	page := protocol.NewPageBudget(limit, MaxWaits)
	ws = []Wait{}
	err = r.scanIDs([]byte{famWaitActive}, cursor, false, func(_ string, v []byte) (bool, error) {
		if page.Full() {
			more = true
			return false, nil
		}
		id := string(v)
		raw, found, err := r.get(waitRecKey(id))
		if err != nil {
			return false, err
		}
		if !found {
			return false, fmt.Errorf("pebblekv: the active Wait index names Wait %s, which does not exist", id)
		}
		if !page.Add(len(raw) + 1) {
			more = true
			return false, nil
		}
		w, err := decodeWait(id, raw)
		ws = append(ws, w)
		return err == nil, err
	})
	if err != nil {
		return nil, false, err
	}
	return ws, more, nil
}

// DueWaits reads up to limit active Waits due at or before now (limit <= 0
// or over MaxWaits is MaxWaits), earliest first, from the due-time index:
// a call costs the Waits it returns, however many are due later.
func (r *Reader) DueWaits(now time.Time, limit int) ([]Wait, error) {
	if limit <= 0 || limit > MaxWaits {
		limit = MaxWaits
	}
	out := []Wait{}
	lower := []byte{famWaitDue}
	upper := prefixEnd(appendTime([]byte{famWaitDue}, now))
	err := r.scan(lower, upper, func(k, _ []byte) (bool, error) {
		if len(k) <= 1+timeLen {
			return false, fmt.Errorf("pebblekv: Wait due index key %x is malformed", k)
		}
		w, err := r.mustWait(string(k[1+timeLen:]), "Wait due-time")
		out = append(out, w)
		return err == nil && len(out) < limit, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NextWaitDue is the earliest due time of an active Wait; ok false means
// no active Wait has one.
func (r *Reader) NextWaitDue() (due time.Time, ok bool, err error) {
	lower := []byte{famWaitDue}
	err = r.scan(lower, prefixEnd(lower), func(k, _ []byte) (bool, error) {
		if len(k) <= 1+timeLen {
			return false, fmt.Errorf("pebblekv: Wait due index key %x is malformed", k)
		}
		due, ok = readTime(k[1:]), true
		return false, nil
	})
	return due, ok, err
}
