package pebblekv

import (
	"encoding/binary"
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
)

// WorkTail is how many of a Work's latest inputs its record keeps in
// Inputs. The record stays small however long a standing Work lives; every
// input is in the input index, which WorkInputs pages.
const WorkTail = 64

// MaxWorkInputs is the largest page WorkInputs returns.
const MaxWorkInputs = 1000

// workInputOverhead is an input's JSON in a page without its event ID:
// {"n":<up to 20 digits>,"event_id":""} and the separating comma.
const workInputOverhead = 42

// WorkInput is one input of a Work: the Event routed to it, and its place
// among the Work's inputs.
type WorkInput struct {
	// N is the input's number: 1 for the Work's first input, then one more
	// for each input routed to it.
	N     uint64 `json:"n"`
	Event string `json:"event_id"`
}

func workInputKey(work string, n uint64) []byte { return appendSeq(indexPrefix(famWorkInput, work), n) }
func workInputIDKey(work, eventID string) []byte {
	return append(indexPrefix(famWorkInputID, work), eventID...)
}

// legacyInputs are the inputs of a record written before the input index:
// every one in Inputs and no InputCount. nil for a record of today's
// layout, which counts its inputs.
func (w Work) legacyInputs() []string {
	if w.InputCount == 0 && len(w.Inputs) > 0 {
		return w.Inputs
	}
	return nil
}

// bounded is w as readers see it whatever layout it was stored in: the
// count of its inputs and only the latest WorkTail of them.
func (w Work) bounded() Work {
	if old := w.legacyInputs(); old != nil {
		w.InputCount, w.Inputs = len(old), tail(old)
	}
	return w
}

// tail is the last WorkTail of ids, in a slice of its own when it is cut,
// so a long list read from an old record is not kept alive by it.
func tail(ids []string) []string {
	if len(ids) <= WorkTail {
		return ids
	}
	return slices.Clone(ids[len(ids)-WorkTail:])
}

// storedWork reads a Work's record as written: an old-layout record keeps
// every input in Inputs and no InputCount.
func (r *Reader) storedWork(id string) (w Work, found bool, err error) {
	if id == "" {
		return Work{}, false, nil
	}
	raw, found, err := r.get(workRecKey(id))
	if err != nil || !found {
		return Work{}, false, err
	}
	w, err = decodeWork(id, raw)
	return w, err == nil, err
}

// HasWorkInput reports whether eventID was routed to the Work: one point
// read, however many inputs the Work has. An Event's Works are not the
// answer, since they also name the Works an Event names without being
// routed to them.
func (r *Reader) HasWorkInput(workID, eventID string) (bool, error) {
	w, found, err := r.storedWork(workID)
	if err != nil || !found {
		return false, err
	}
	return r.isInput(w, eventID)
}

// isInput reports whether eventID is an input of w, its record as stored.
func (r *Reader) isInput(w Work, eventID string) (bool, error) {
	if old := w.legacyInputs(); old != nil {
		return slices.Contains(old, eventID), nil
	}
	return r.hasIndexedInput(w.ID, eventID)
}

func (r *Reader) hasIndexedInput(workID, eventID string) (bool, error) {
	_, found, err := r.get(workInputIDKey(workID, eventID))
	return found, err
}

// WorkInputs reads one page of a Work's inputs in the order they were
// routed to it: those numbered after after, at most limit (limit <= 0 or
// over MaxWorkInputs means MaxWorkInputs), and, past the first, at most
// protocol.MaxPageBytes of them as a page encodes them. more says another
// input follows the page. An unknown Work is protocol.ErrNotFound.
func (r *Reader) WorkInputs(workID string, after uint64, limit int) (ins []WorkInput, more bool, err error) {
	w, found, err := r.storedWork(workID)
	if err != nil {
		return nil, false, err
	}
	if !found {
		return nil, false, protocol.Errorf(protocol.ErrNotFound, "Work %q does not exist", workID)
	}
	page := protocol.NewPageBudget(limit, MaxWorkInputs)
	ins = []WorkInput{}
	take := func(n uint64, id string) bool {
		if page.Full() || !page.Add(len(id)+workInputOverhead) {
			more = true
			return false
		}
		ins = append(ins, WorkInput{N: n, Event: id})
		return true
	}
	if old := w.legacyInputs(); old != nil {
		for i := after; i < uint64(len(old)) && take(i+1, old[i]); i++ {
		}
		return ins, more, nil
	}
	if after == ^uint64(0) {
		return ins, false, nil
	}
	prefix := indexPrefix(famWorkInput, workID)
	err = r.scan(appendSeq(clone(prefix), after+1), prefixEnd(prefix), func(k, v []byte) (bool, error) {
		n, err := seqSuffix(k)
		if err != nil {
			return false, err
		}
		return take(n, string(v)), nil
	})
	if err != nil {
		return nil, false, err
	}
	return ins, more, nil
}

// inputsAdded are the inputs w adds to the stored Work old (its record as
// written): those past old's tail. w's inputs must begin with that tail,
// since inputs only grow; each added one must be new to the Work (a point
// read, or the old record's list before its migration) and named once.
func (tx *Tx) inputsAdded(w, old Work, had bool) ([]string, error) {
	var prior []string
	if had {
		prior = old.bounded().Inputs
	}
	if len(w.Inputs) < len(prior) || !slices.Equal(prior, w.Inputs[:len(prior)]) {
		return nil, protocol.Errorf(protocol.ErrInvalid, "Work %s would drop inputs; inputs only grow", w.ID)
	}
	added := w.Inputs[len(prior):]
	legacy := old.legacyInputs()
	for i, id := range added {
		dup := slices.Contains(added[:i], id) || slices.Contains(prior, id) || slices.Contains(legacy, id)
		if !dup && had && legacy == nil {
			var err error
			if dup, err = tx.hasIndexedInput(w.ID, id); err != nil {
				return nil, err
			}
		}
		if dup {
			return nil, protocol.Errorf(protocol.ErrInvalid, "Work %s names input %q twice", w.ID, id)
		}
	}
	return added, nil
}

// writeInputs writes the index entries of the inputs added to a Work that
// had count inputs, after moving an old-layout record's inputs (legacy,
// count of them) into the index.
func (tx *Tx) writeInputs(workID string, legacy []string, count int, added []string) error {
	n := uint64(count - len(legacy))
	for _, id := range slices.Concat(legacy, added) {
		n++
		if err := tx.set(workInputKey(workID, n), []byte(id)); err != nil {
			return err
		}
		if err := tx.set(workInputIDKey(workID, id), binary.BigEndian.AppendUint64(nil, n)); err != nil {
			return err
		}
	}
	return nil
}
