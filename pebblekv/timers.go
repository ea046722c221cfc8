package pebblekv

import (
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// MaxTimers is the largest page Timers and DueTimers return.
const MaxTimers = 1000

// Timer is a durable timer a package armed: when Due passes, it fires an
// Event of Family into Scope, and, with a Recurrence, is rearmed at the
// rule's next occurrence.
type Timer struct {
	// ID is TimerID(Owner, the owner's own id): unique per owner.
	ID string `json:"id"`
	// Owner is the package that armed the timer.
	Owner string    `json:"owner"`
	Scope string    `json:"scope_id"`
	Due   time.Time `json:"due"`
	// Family is the Event type a firing emits: one of the owner's families.
	Family  string           `json:"family"`
	Payload protocol.Payload `json:"payload"`
	// Recurrence, when set, rearms the timer through recurrence.next.
	Recurrence *protocol.RecurrenceRule `json:"recurrence,omitempty"`
	// Fired counts the firings; a firing's delivery ID is "<ID>/<Fired>",
	// so a firing retried after a crash is accepted once.
	Fired int `json:"fired,omitzero"`
}

// TimerID is the store's ID of the timer a package armed as id: "<owner>/<id>".
func TimerID(owner, id string) string { return owner + "/" + id }

func timerRecKey(id string) []byte { return famKey(famTimerRec, id) }

func timerDueKey(due time.Time, id string) []byte {
	return append(appendTime(append(make([]byte, 0, 1+timeLen+len(id)), famTimerDue), due), id...)
}

// check refuses a timer the store cannot index.
func (t Timer) check() error {
	switch {
	case t.Owner == "":
		return protocol.Errorf(protocol.ErrInvalid, "timer %q needs its owner", t.ID)
	case !strings.HasPrefix(t.ID, t.Owner+"/") || len(t.ID) == len(t.Owner)+1:
		return protocol.Errorf(protocol.ErrInvalid, "timer %q of %s must be named TimerID(owner, id)", t.ID, t.Owner)
	case t.Family == "":
		return protocol.Errorf(protocol.ErrInvalid, "timer %s needs the family it fires", t.ID)
	case t.Due.IsZero():
		return protocol.Errorf(protocol.ErrInvalid, "timer %s needs a due time", t.ID)
	case t.Recurrence != nil && t.Recurrence.Kind == "":
		return protocol.Errorf(protocol.ErrInvalid, "timer %s's recurrence needs a kind", t.ID)
	}
	return nil
}

// PutTimer writes t and its entry in the due-time index, removing the
// entry of the timer it replaces, in tx's one batch. A timer without an
// owner, a family or a due time, or whose ID is not TimerID(Owner, …), is
// protocol.ErrInvalid, and nothing is written.
func (tx *Tx) PutTimer(t Timer) error {
	t.Due = t.Due.UTC()
	if err := t.check(); err != nil {
		return err
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("pebblekv: encode timer %s: %w", t.ID, err)
	}
	if len(raw) > protocol.MaxPageBytes {
		return protocol.Errorf(protocol.ErrTooLarge, "timer %s is %d bytes encoded; keep its payload within %d", t.ID, len(raw), protocol.MaxPageBytes)
	}
	old, had, err := tx.Timer(t.ID)
	if err != nil {
		return err
	}
	if had {
		if err := tx.delete(timerDueKey(old.Due, old.ID)); err != nil {
			return err
		}
	}
	if err := tx.set(timerDueKey(t.Due, t.ID), nil); err != nil {
		return err
	}
	return tx.set(timerRecKey(t.ID), raw)
}

// DeleteTimer removes the timer id and its due-time entry; found false
// means there was none, and nothing is written.
func (tx *Tx) DeleteTimer(id string) (found bool, err error) {
	old, had, err := tx.Timer(id)
	if err != nil || !had {
		return false, err
	}
	if err := tx.delete(timerDueKey(old.Due, old.ID)); err != nil {
		return false, err
	}
	return true, tx.delete(timerRecKey(id))
}

// Timer reads one timer by ID; found false means there is none.
func (r *Reader) Timer(id string) (t Timer, found bool, err error) {
	if id == "" {
		return Timer{}, false, nil
	}
	raw, found, err := r.get(timerRecKey(id))
	if err != nil || !found {
		return Timer{}, false, err
	}
	t, err = decodeTimer(id, raw)
	return t, err == nil, err
}

func decodeTimer(id string, raw []byte) (Timer, error) {
	var t Timer
	if err := json.Unmarshal(raw, &t); err != nil {
		return Timer{}, fmt.Errorf("pebblekv: decode timer %s: %w", id, err)
	}
	return t, nil
}

// DueTimers reads up to limit timers due at or before now (limit <= 0 or
// over MaxTimers is MaxTimers), earliest first, from the due-time index: a
// call costs the timers it returns, however many are armed for later.
func (r *Reader) DueTimers(now time.Time, limit int) ([]Timer, error) {
	if limit <= 0 || limit > MaxTimers {
		limit = MaxTimers
	}
	out := []Timer{}
	lower := []byte{famTimerDue}
	upper := prefixEnd(appendTime([]byte{famTimerDue}, now))
	err := r.scan(lower, upper, func(k, _ []byte) (bool, error) {
		t, err := r.timerAt(k)
		if err != nil {
			return false, err
		}
		out = append(out, t)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// timerAt reads the timer a due-time index key names.
func (r *Reader) timerAt(k []byte) (Timer, error) {
	if len(k) <= 1+timeLen {
		return Timer{}, fmt.Errorf("pebblekv: timer index key %x is malformed", k)
	}
	id := string(k[1+timeLen:])
	t, found, err := r.Timer(id)
	if err == nil && !found {
		err = fmt.Errorf("pebblekv: the timer index names timer %s, which does not exist", id)
	}
	return t, err
}

// NextDue is the earliest due time of any timer; ok false means none is
// armed.
func (r *Reader) NextDue() (due time.Time, ok bool, err error) {
	lower := []byte{famTimerDue}
	err = r.scan(lower, prefixEnd(lower), func(k, _ []byte) (bool, error) {
		if len(k) < 1+timeLen {
			return false, fmt.Errorf("pebblekv: timer index key %x is malformed", k)
		}
		due, ok = readTime(k[1:]), true
		return false, nil
	})
	return due, ok, err
}

// TimerQuery selects a page of timers. An empty Owner or Scope selects
// every one.
type TimerQuery struct {
	Owner string
	Scope string
	// After is the last ID of the page before.
	After string
	// Limit caps the page's timers; <= 0 or over MaxTimers is MaxTimers.
	Limit int
}

// Timers reads one page of timers in ID order (so by owner): at most
// q.Limit, and, past the first, at most protocol.MaxPageBytes of them as
// they encode. more says another timer follows the page. An Owner reads
// only that owner's timers; a Scope is a filter over them.
func (r *Reader) Timers(q TimerQuery) (ts []Timer, more bool, err error) {
	prefix := []byte{famTimerRec}
	if q.Owner != "" {
		prefix = timerRecKey(TimerID(q.Owner, ""))
	}
	after := q.After
	if own := TimerID(q.Owner, ""); after != "" && q.Owner != "" {
		switch {
		case strings.HasPrefix(after, own):
			after = after[len(own):]
		case after < own:
			after = ""
		default:
			return []Timer{}, false, nil
		}
	}
	page := protocol.NewPageBudget(q.Limit, MaxTimers)
	ts = []Timer{}
	err = r.scanIDs(prefix, after, false, func(id string, raw []byte) (bool, error) {
		t, err := decodeTimer(id, raw)
		if err != nil {
			return false, err
		}
		if q.Scope != "" && t.Scope != q.Scope {
			return true, nil
		}
		if page.Full() {
			more = true
			return false, nil
		}
		if !page.Add(len(raw) + 1) {
			more = true
			return false, nil
		}
		ts = append(ts, t)
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return ts, more, nil
}
