package notes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// The KV layouts, in namespace Store:
//
//	layout 1: note/<id> → the text, plain bytes; order/<thread> → JSON [ids]
//	layout 2: note/<id> → JSON Record2;          order/<thread> → JSON [ids]
//	layout 3: thread/<thread>/<seq> → JSON Entry; note/<id> → "thread/<thread>/<seq>";
//	          seq/<thread> → the thread's last seq
//
// Layouts 1 and 2 list a thread's notes in one value; layout 3 gives each
// note a key under its thread, so a read is one prefix scan and a write
// touches no other note.
const (
	notePrefix  = "note/"
	orderPrefix = "order/"
	// ThreadPrefix starts a layout-3 note's key.
	ThreadPrefix = "thread/"
	seqPrefix    = "seq/"
	// seqDigits pads a seq so key order is note order.
	seqDigits = 8
)

// Record2 is a note in layout 2.
type Record2 struct {
	Thread string    `json:"thread"`
	Text   string    `json:"text"`
	At     time.Time `json:"at,omitzero"`
}

// Entry is a note as layout 3 keeps it and as notes.read answers it. At is
// zero for a note written by release 1, which kept no time.
type Entry struct {
	ID   string    `json:"id"`
	Text string    `json:"text"`
	At   time.Time `json:"at,omitzero"`
}

// WriteInput is notes.write's input.
type WriteInput struct {
	Thread string `json:"thread" doc:"The thread the note is on (no '/', at most 100 bytes)."`
	Text   string `json:"text" doc:"The note (at most 4 KiB); one starting with ! is urgent."`
}

// WriteOutput is notes.write's output: the note's id.
type WriteOutput struct {
	ID     string `json:"id"`
	Thread string `json:"thread"`
}

// ReadInput is notes.read's input.
type ReadInput struct {
	Thread string `json:"thread" doc:"The thread to read."`
}

// ReadOutput is a thread's notes, oldest first.
type ReadOutput struct {
	Thread string  `json:"thread"`
	Notes  []Entry `json:"notes"`
}

// store serves the operations in one release's layout.
type store struct{ layout int }

// write stores a note in the release's layout, under an id derived from
// the call's request ID, so a retried call stores it once and answers the
// same id.
func (s store) write(ctx context.Context, r *sdk.Request, in WriteInput) (WriteOutput, error) {
	if err := checkThread(in.Thread); err != nil {
		return WriteOutput{}, err
	}
	if err := checkText(in.Text); err != nil {
		return WriteOutput{}, err
	}
	id := noteID(r.RequestID)
	at := time.Now().UTC()
	var err error
	if s.layout <= 2 {
		err = writeListed(ctx, r.Host, s.layout, in.Thread, id, in.Text, at)
	} else {
		err = writeKeyed(ctx, r.Host, in.Thread, Entry{ID: id, Text: in.Text, At: at})
	}
	if err != nil {
		return WriteOutput{}, err
	}
	return WriteOutput{ID: id, Thread: in.Thread}, nil
}

// noteID is a note's id: from the request ID when the call has one, else
// random.
func noteID(requestID string) string {
	if requestID == "" {
		return "n-" + rand.Text()[:16]
	}
	sum := sha256.Sum256([]byte(requestID))
	return "n-" + hex.EncodeToString(sum[:8])
}

// writeListed writes a note in layout 1 or 2: the note's key and its id
// appended to the thread's list, in one batch guarded by the list's
// version. An id the list holds already is a retry: nothing is written.
func writeListed(ctx context.Context, h *sdk.Host, layout int, thread, id, text string, at time.Time) error {
	_, err := h.Update(ctx, Store, orderPrefix+thread, func(old []byte, found bool, b *sdk.Batch) ([]byte, error) {
		var ids []string
		if found {
			if err := json.Unmarshal(old, &ids); err != nil {
				return nil, fmt.Errorf("thread %s's list is not a JSON list of ids: %w", thread, err)
			}
		}
		for _, have := range ids {
			if have == id {
				return old, nil
			}
		}
		value := []byte(text)
		if layout == 2 {
			var err error
			if value, err = json.Marshal(Record2{Thread: thread, Text: text, At: at}); err != nil {
				return nil, err
			}
		}
		b.Put(Store, notePrefix+id, value)
		return json.Marshal(append(ids, id))
	})
	return err
}

// writeKeyed writes a note in layout 3: its key under the thread at the
// thread's next seq, its index, and the seq, in one batch guarded by the
// seq's version and the index's absence. An indexed id is a retry:
// nothing is written.
func writeKeyed(ctx context.Context, h *sdk.Host, thread string, e Entry) error {
	for range 16 {
		if idx, err := h.Get(ctx, Store, notePrefix+e.ID); err != nil || idx.Found {
			return err
		}
		cur, err := h.Get(ctx, Store, seqPrefix+thread)
		if err != nil {
			return err
		}
		seq := 0
		if cur.Found {
			if seq, err = strconv.Atoi(string(cur.Value)); err != nil {
				return fmt.Errorf("thread %s's seq is not a number", thread)
			}
		}
		b := sdk.NewBatch().CheckAbsent(Store, notePrefix+e.ID)
		if cur.Found {
			b.Check(Store, seqPrefix+thread, cur.Version)
		} else {
			b.CheckAbsent(Store, seqPrefix+thread)
		}
		if err := putKeyed(b, thread, seq+1, e); err != nil {
			return err
		}
		b.Put(Store, seqPrefix+thread, []byte(strconv.Itoa(seq+1)))
		_, err = h.Commit(ctx, b)
		if !errors.Is(err, sdk.ErrConflict) {
			return err
		}
	}
	return sdk.Errorf(sdk.ErrConflict, "thread %s: other writes kept conflicting; write the note again", thread)
}

// putKeyed adds a layout-3 note at seq to b: the note and its index.
func putKeyed(b *sdk.Batch, thread string, seq int, e Entry) error {
	value, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := keyedKey(thread, seq)
	b.Put(Store, key, value).Put(Store, notePrefix+e.ID, []byte(key))
	return nil
}

// keyedKey is a layout-3 note's key.
func keyedKey(thread string, seq int) string {
	return fmt.Sprintf("%s%s/%0*d", ThreadPrefix, thread, seqDigits, seq)
}

// read answers a thread's notes in the release's layout, oldest first.
func (s store) read(ctx context.Context, r *sdk.Request, in ReadInput) (ReadOutput, error) {
	if err := checkThread(in.Thread); err != nil {
		return ReadOutput{}, err
	}
	out := ReadOutput{Thread: in.Thread, Notes: []Entry{}}
	var err error
	if s.layout <= 2 {
		out.Notes, err = readListed(ctx, r.Host, s.layout, in.Thread)
	} else {
		out.Notes, err = readKeyed(ctx, r.Host, in.Thread)
	}
	return out, err
}

// readListed reads a thread in layout 1 or 2: its list, then each note.
func readListed(ctx context.Context, h *sdk.Host, layout int, thread string) ([]Entry, error) {
	list, err := h.Get(ctx, Store, orderPrefix+thread)
	if err != nil || !list.Found {
		return []Entry{}, err
	}
	var ids []string
	if err := json.Unmarshal(list.Value, &ids); err != nil {
		return nil, fmt.Errorf("thread %s's list is not a JSON list of ids: %w", thread, err)
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		v, err := h.Get(ctx, Store, notePrefix+id)
		if err != nil {
			return nil, err
		}
		if !v.Found {
			continue
		}
		e := Entry{ID: id, Text: string(v.Value)}
		if layout == 2 {
			var rec Record2
			if err := json.Unmarshal(v.Value, &rec); err != nil {
				return nil, fmt.Errorf("note %s is not a layout-2 record: %w", id, err)
			}
			e.Text, e.At = rec.Text, rec.At
		}
		out = append(out, e)
	}
	return out, nil
}

// readKeyed reads a thread in layout 3: one scan of its keys.
func readKeyed(ctx context.Context, h *sdk.Host, thread string) ([]Entry, error) {
	items, err := h.List(ctx, Store, ThreadPrefix+thread+"/")
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(items))
	for _, it := range items {
		var e Entry
		if err := json.Unmarshal(it.Value, &e); err != nil {
			return nil, fmt.Errorf("note %s is not a layout-3 entry: %w", it.Key, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Summary is the compact task's record of one thread.
type Summary struct {
	Count  int       `json:"count"`
	LastID string    `json:"last_id"`
	LastAt time.Time `json:"last_at,omitzero"`
	// Last is the start of the last note's text, one line.
	Last string `json:"last"`
}

// summaryText is how much of the last note a Summary keeps.
const summaryText = 80

// compact brings each thread's Summary in line with the notes in KV: it
// writes only the summaries that differ and deletes those of threads with
// no notes, so a second pass over the same notes writes nothing.
func compact(ctx context.Context, r *sdk.Request) error {
	want, err := summaries(ctx, r.Host)
	if err != nil {
		return err
	}
	have, err := r.Host.List(ctx, Threads, "")
	if err != nil {
		return err
	}
	b := sdk.NewBatch()
	for _, it := range have {
		s, ok := want[it.Key]
		if !ok {
			b.Check(Threads, it.Key, it.Version).Delete(Threads, it.Key)
			continue
		}
		delete(want, it.Key)
		if raw, _ := json.Marshal(s); string(raw) != string(it.Value) {
			b.Check(Threads, it.Key, it.Version).Put(Threads, it.Key, raw)
		}
	}
	for thread, s := range want {
		raw, err := json.Marshal(s)
		if err != nil {
			return err
		}
		b.CheckAbsent(Threads, thread).Put(Threads, thread, raw)
	}
	if b.Empty() {
		return nil
	}
	_, err = r.Host.Commit(ctx, b)
	if errors.Is(err, sdk.ErrConflict) {
		return fmt.Errorf("another pass compacted meanwhile; the next pass goes on: %w", err)
	}
	return err
}

// summaries is each thread's Summary from the layout-3 notes.
func summaries(ctx context.Context, h *sdk.Host) (map[string]Summary, error) {
	items, err := h.List(ctx, Store, ThreadPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string]Summary{}
	for _, it := range items {
		thread, _, ok := strings.Cut(strings.TrimPrefix(it.Key, ThreadPrefix), "/")
		var e Entry
		if !ok || json.Unmarshal(it.Value, &e) != nil {
			continue
		}
		s := out[thread]
		s.Count++
		s.LastID, s.LastAt, s.Last = e.ID, e.At, firstLine(e.Text, summaryText)
		out[thread] = s
	}
	return out, nil
}

// firstLine is text's first line, cut to at most max bytes at a rune.
func firstLine(text string, max int) string {
	text, _, _ = strings.Cut(text, "\n")
	if len(text) <= max {
		return text
	}
	for max > 0 && text[max]&0xC0 == 0x80 {
		max--
	}
	return text[:max]
}
