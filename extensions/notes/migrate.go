package notes

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/sdk"
)

// MigrateBatch is the most notes one migration commit converts, so a
// migration never sends a batch that grows with the store.
const MigrateBatch = 64

// Keys of namespace Meta.
const (
	// layoutKey holds the layout the notes are in, once a migration
	// reached it; absent, they are in layout 1 (or there are none).
	layoutKey = "layout"
	// cursorKey holds how far the 1→2 step has converted.
	cursorKey = "migration"
)

// cursor is the 1→2 step's progress: every note key up to After is
// converted. It is committed with the notes it covers.
type cursor struct {
	To    int    `json:"to"`
	After string `json:"after"`
}

// migrate upgrades the notes from layout from to layout to one step at a
// time. Each step is idempotent: it skips when Meta records its layout
// reached, and a step cut short resumes where its last commit left it, so
// running a migration again, whole or interrupted, gives the same notes.
func migrate(ctx context.Context, r *sdk.Request, from, to int) error {
	done, err := layoutReached(ctx, r.Host)
	if err != nil {
		return err
	}
	for step := max(from, 1); step < to; step++ {
		if done > step {
			continue
		}
		switch step {
		case 1:
			err = migrate12(ctx, r.Host)
		case 2:
			err = migrate23(ctx, r.Host)
		default:
			err = fmt.Errorf("no migration from notes layout %d to %d: this release knows layouts 1 to 3", step, step+1)
		}
		if err != nil {
			return fmt.Errorf("notes layout %d to %d: %w", step, step+1, err)
		}
	}
	return nil
}

// layoutReached is the layout Meta records the notes reached, 0 for none.
func layoutReached(ctx context.Context, h *sdk.Host) (int, error) {
	v, err := h.Get(ctx, Meta, layoutKey)
	if err != nil || !v.Found {
		return 0, err
	}
	n, err := strconv.Atoi(string(v.Value))
	if err != nil {
		return 0, fmt.Errorf("%s/%s holds %q, not a layout number", Meta, layoutKey, v.Value)
	}
	return n, nil
}

// migrate12 rewrites each note/<id> from its plain text to a Record2
// naming its thread (from the thread lists; release 1 kept no time), a
// batch at a time, each batch moving the cursor past its notes. A text
// cannot say whether it was converted already, so the cursor is what
// makes a re-run convert nothing twice.
func migrate12(ctx context.Context, h *sdk.Host) error {
	var cur cursor
	if v, err := h.Get(ctx, Meta, cursorKey); err != nil {
		return err
	} else if v.Found {
		if err := json.Unmarshal(v.Value, &cur); err != nil || cur.To != 2 {
			return fmt.Errorf("%s/%s holds %q, not the cursor of a migration to layout 2", Meta, cursorKey, v.Value)
		}
	}
	threadOf, err := threadsByID(ctx, h)
	if err != nil {
		return err
	}
	notes, err := h.List(ctx, Store, notePrefix)
	if err != nil {
		return err
	}
	b, n := sdk.NewBatch(), 0
	for _, it := range notes {
		if it.Key <= cur.After {
			continue
		}
		id := strings.TrimPrefix(it.Key, notePrefix)
		// A note no list names (release 1 writes a note and its list in
		// one batch, so none should be) keeps an empty thread.
		raw, err := json.Marshal(Record2{Thread: threadOf[id], Text: string(it.Value)})
		if err != nil {
			return err
		}
		b.Put(Store, it.Key, raw)
		if n++; n == MigrateBatch {
			if err := commitCursor(ctx, h, b, it.Key); err != nil {
				return err
			}
			b, n = sdk.NewBatch(), 0
		}
	}
	if n > 0 {
		if err := commitCursor(ctx, h, b, notes[len(notes)-1].Key); err != nil {
			return err
		}
	}
	_, err = h.Commit(ctx, sdk.NewBatch().Put(Meta, layoutKey, []byte("2")).Delete(Meta, cursorKey))
	return err
}

// commitCursor commits b with the cursor moved to after.
func commitCursor(ctx context.Context, h *sdk.Host, b *sdk.Batch, after string) error {
	raw, err := json.Marshal(cursor{To: 2, After: after})
	if err != nil {
		return err
	}
	_, err = h.Commit(ctx, b.Put(Meta, cursorKey, raw))
	return err
}

// threadsByID maps each note's id to its thread, from the thread lists of
// layouts 1 and 2.
func threadsByID(ctx context.Context, h *sdk.Host) (map[string]string, error) {
	lists, err := h.List(ctx, Store, orderPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range lists {
		var ids []string
		if err := json.Unmarshal(it.Value, &ids); err != nil {
			return nil, fmt.Errorf("%s is not a JSON list of ids: %w", it.Key, err)
		}
		for _, id := range ids {
			out[id] = strings.TrimPrefix(it.Key, orderPrefix)
		}
	}
	return out, nil
}

// migrate23 moves each thread's notes, in its list's order, under the
// thread's keys (seq = position in the list), rewrites note/<id> as their
// index, and drops the list with its thread's last batch. A note already
// indexed is skipped, and a list is dropped only once its notes are all
// moved, so a re-run finishes what an interrupted one began.
func migrate23(ctx context.Context, h *sdk.Host) error {
	lists, err := h.List(ctx, Store, orderPrefix)
	if err != nil {
		return err
	}
	for _, it := range lists {
		thread := strings.TrimPrefix(it.Key, orderPrefix)
		var ids []string
		if err := json.Unmarshal(it.Value, &ids); err != nil {
			return fmt.Errorf("%s is not a JSON list of ids: %w", it.Key, err)
		}
		if err := moveThread(ctx, h, thread, ids); err != nil {
			return err
		}
	}
	_, err = h.Commit(ctx, sdk.NewBatch().Put(Meta, layoutKey, []byte("3")))
	return err
}

// moveThread moves one thread's notes in batches of MigrateBatch; its last
// batch sets the thread's seq and deletes its list.
func moveThread(ctx context.Context, h *sdk.Host, thread string, ids []string) error {
	for start := 0; start < len(ids) || start == 0; start += MigrateBatch {
		b := sdk.NewBatch()
		end := min(start+MigrateBatch, len(ids))
		for i := start; i < end; i++ {
			if err := moveNote(ctx, h, b, thread, i+1, ids[i]); err != nil {
				return err
			}
		}
		if end == len(ids) {
			b.Put(Store, seqPrefix+thread, []byte(strconv.Itoa(len(ids)))).Delete(Store, orderPrefix+thread)
		}
		if _, err := h.Commit(ctx, b); err != nil {
			return err
		}
		if end == len(ids) {
			return nil
		}
	}
	return nil
}

// moveNote adds to b the move of one layout-2 note to seq of thread; a
// note already indexed (moved by an earlier run) or missing adds nothing.
func moveNote(ctx context.Context, h *sdk.Host, b *sdk.Batch, thread string, seq int, id string) error {
	v, err := h.Get(ctx, Store, notePrefix+id)
	if err != nil || !v.Found || strings.HasPrefix(string(v.Value), ThreadPrefix) {
		return err
	}
	var rec Record2
	if err := json.Unmarshal(v.Value, &rec); err != nil {
		return fmt.Errorf("note %s is not a layout-2 record: %w", id, err)
	}
	return putKeyed(b, thread, seq, Entry{ID: id, Text: rec.Text, At: rec.At})
}
