package pebblekv

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walWatch is a filesystem that counts the syncs of Pebble's WAL files
// and, while a gate is set, holds each of them until the gate closes.
type walWatch struct {
	vfs.FS
	syncs atomic.Int64
	// waiting hears (without blocking) of each sync the gate holds.
	waiting chan struct{}

	mu   sync.Mutex
	gate chan struct{}
}

func (w *walWatch) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, c)
	return w.wrap(name, f, err)
}

func (w *walWatch) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(old, name, c)
	return w.wrap(name, f, err)
}

func (w *walWatch) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return walFile{File: f, w: w}, nil
}

// hold makes every WAL sync wait until the returned release is called.
func (w *walWatch) hold() (release func()) {
	gate := make(chan struct{})
	w.mu.Lock()
	w.gate = gate
	w.mu.Unlock()
	return sync.OnceFunc(func() {
		w.mu.Lock()
		w.gate = nil
		w.mu.Unlock()
		close(gate)
	})
}

func (w *walWatch) sync() {
	w.syncs.Add(1)
	w.mu.Lock()
	gate := w.gate
	w.mu.Unlock()
	if gate != nil {
		select {
		case w.waiting <- struct{}{}:
		default:
		}
		<-gate
	}
}

type walFile struct {
	vfs.File
	w *walWatch
}

func (f walFile) Sync() error     { f.w.sync(); return f.File.Sync() }
func (f walFile) SyncData() error { f.w.sync(); return f.File.SyncData() }

// TestUpdatesShareTheWALSync holds the WAL sync of one Update and starts
// seven more: each applies meanwhile (seeing every earlier one: they count
// up one key), none returns before its sync, and the seven share the WAL
// syncs that follow instead of taking one each (Pebble's group commit).
// An Update holding the writer mutex through its sync would keep the seven
// from applying, and the count from reaching eight.
func TestUpdatesShareTheWALSync(t *testing.T) {
	w := &walWatch{FS: vfs.Default, waiting: make(chan struct{}, 1)}
	var (
		mu   sync.Mutex
		seen []uint64
	)
	db := openDB(t, &Options{fs: w, Committed: func(n uint64) {
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
	}})
	base := db.Commits()
	release := w.hold()
	defer release()
	before := w.syncs.Load()

	const n = 8
	done := make(chan error, n)
	count := func(i int) {
		done <- db.Update(func(tx *Tx) error {
			v, _, _, err := tx.KVGet("n", "count")
			if err != nil {
				return err
			}
			c, _ := strconv.Atoi(string(v))
			if err := tx.KVPut("n", "count", []byte(strconv.Itoa(c+1))); err != nil {
				return err
			}
			return tx.KVPut("n", fmt.Sprint("k", i), []byte("v"))
		})
	}
	go count(0)
	select {
	case <-w.waiting:
	case <-time.After(60 * time.Second):
		t.Fatal("the first Update's WAL sync never started")
	}
	for i := 1; i < n; i++ {
		go count(i)
	}
	deadline := time.Now().Add(60 * time.Second)
	for string(kvGet(t, db, "n", "count")) != strconv.Itoa(n) {
		if time.Now().After(deadline) {
			t.Fatalf("while the first WAL sync was held, the count reached %q, not %d: the other Updates waited for it", kvGet(t, db, "n", "count"), n)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("an Update returned (%v) while the WAL sync was held", err)
	default:
	}
	if db.Commits() != base {
		t.Errorf("Commits %d before any sync ended, want %d", db.Commits(), base)
	}
	release()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	syncs := w.syncs.Load() - before
	t.Logf("%d Updates, %d WAL syncs", n, syncs)
	if syncs >= n {
		t.Errorf("%d Updates took %d WAL syncs: none were shared", n, syncs)
	}
	mu.Lock()
	defer mu.Unlock()
	if db.Commits() != base+n || len(seen) == 0 || seen[len(seen)-1] != base+n || !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != len(seen) {
		t.Errorf("Commits %d, Committed heard %v; want %d last, in order, each once", db.Commits(), seen, base+n)
	}
}
