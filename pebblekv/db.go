package pebblekv

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Sentinel errors of the store itself. Refusals an extension can cause are
// protocol errors (protocol.ErrConflict, protocol.ErrStorageFull, …) instead.
var (
	// ErrClosed is returned by Update and View after Close.
	ErrClosed = errors.New("pebblekv: closed")
	// ErrTxDone is returned by a Tx or Reader used after its Update or View
	// returned.
	ErrTxDone = errors.New("pebblekv: transaction is done")
	// ErrNoStore is returned by Open with MustExist or ReadOnly when the
	// directory holds no store.
	ErrNoStore = errors.New("pebblekv: no store in the directory")
	// ErrReadOnly is returned by Update on a store opened ReadOnly.
	ErrReadOnly = errors.New("pebblekv: the store was opened read-only")
	// ErrDamaged is wrapped by every error of a read that met a damaged
	// store file (a *DamageError says which).
	ErrDamaged = errors.New("pebblekv: a store file is damaged")
	// ErrFailed is wrapped by every Update and View after Pebble failed in a
	// way it cannot go on from (a write the WAL or MANIFEST could not take):
	// the store answers nothing until it is opened again.
	ErrFailed = errors.New("pebblekv: the store stopped")
)

// storeFormat is the layout version of this package's keys, recorded under
// 'm' "format". A store written by a newer layout is refused at Open.
const storeFormat = 1

// The store's identity and commit count, under famMeta beside the other
// meta keys (keys.go): written by the store itself, out of every
// extension's reach.
var (
	metaID      = []byte{famMeta, 'i', 'd'}
	metaCommits = []byte{famMeta, 'c', 'o', 'm', 'm', 'i', 't', 's'}
)

// Options configures Open. A nil *Options means every default.
type Options struct {
	// NoSync commits batches without syncing the WAL: a crash may lose
	// acknowledged commits. Benchmarks only; the daemon never sets it.
	NoSync bool
	// Logger receives Pebble's own log lines. The default discards them.
	Logger *slog.Logger
	// CacheSize is the block cache's size in bytes; 0 means
	// DefaultCacheSize.
	CacheSize int64
	// ReadOnly opens the store without changing a file: Pebble replays the
	// WAL into memory only, and Update returns ErrReadOnly. It implies
	// MustExist.
	ReadOnly bool
	// MustExist refuses a directory that holds no store (ErrNoStore)
	// instead of creating one.
	MustExist bool
	// Reserve is the free space, in bytes, an Update must leave on the
	// store's filesystem; one that would leave less is refused with
	// protocol.ErrStorageFull before Pebble sees it, because Pebble cannot
	// go on after a WAL write fails. 0 means DefaultReserve; a negative
	// Reserve turns the check off.
	Reserve int64
	// Committed, when set, is called as Updates' batches become durable
	// (synced, unless NoSync), with the store's commit number (Commits):
	// calls come one at a time and in order, never with a number already
	// reported. Commits made durable by one WAL sync may be reported by
	// one call with the last of them, since a commit durable means every
	// earlier one is. It must be quick: it holds up the next report.
	Committed func(commit uint64)
	// ManifestSynced, when set, is called after Pebble synced a change to
	// its MANIFEST (a flush, a compaction, a new MANIFEST), with how far the
	// MANIFEST now reaches. It runs on Pebble's goroutines, and never with
	// a smaller mark than an earlier call.
	ManifestSynced func(ManifestMark)

	// fs, when set, is the filesystem Pebble writes through (tests watch
	// the WAL's syncs with it).
	fs vfs.FS
}

// DefaultCacheSize is the block cache's size when Options leave it 0. Pebble's
// own default (8 MiB) does not keep the index and filter blocks of a large
// log: dedupe lookups then read them from the files again (16% cache hits
// against 96% at 200,000 Events), and accepting is about half as fast.
const DefaultCacheSize = 64 << 20

// DefaultReserve is the free space an Update leaves on the store's
// filesystem when Options leave Reserve 0: room for a memtable flush, a
// MANIFEST rotation and the WAL's next file, which Pebble writes without
// asking. Each Update also needs twice its own size (the WAL, then the
// flush).
const DefaultReserve = 32 << 20

// DB is the durable store. It is safe for concurrent use: Views run in
// parallel with each other and with one Update at a time.
type DB struct {
	pdb   *pebble.DB
	dir   string
	write *pebble.WriteOptions
	// po are the options pdb was opened with (the deep check reads the
	// files with them).
	po       *pebble.Options
	readOnly bool
	reserve  int64
	// space is dir held open for the reserve's checks; closed by Close,
	// under life.
	space     spaceDir
	committed func(uint64)
	manifest  manifestWatch

	// life guards pdb against Close: Update and View hold it shared, Close
	// exclusively, so Close waits for every transaction in flight.
	life   sync.RWMutex
	closed bool

	// writer serializes Updates, from the batch's creation until Pebble
	// applied it (made it visible), so the reads inside one (sequence,
	// dedupe, checks) see every earlier commit and no concurrent one. A
	// Pebble batch detects no conflicts; this mutex is what makes an Update
	// a transaction. The WAL sync is waited for after it is released, so
	// the syncs of Updates that overlap are one fsync (Pebble's group
	// commit).
	writer sync.Mutex
	// applied is the number of the last commit applied; written under
	// writer.
	applied uint64

	// id and commits identify the store and count its durable Updates;
	// commits is written under synced and read by anyone.
	id      string
	commits atomic.Uint64
	// synced orders the reports of durable commits (commits, committed).
	synced sync.Mutex

	health health
}

// Open opens the store in dir, creating dir (mode 0700) and the store when
// they do not exist, unless opts say MustExist or ReadOnly. Pebble's
// recovery report (each WAL replayed, where it stopped) is kept: Recovery.
func Open(dir string, opts *Options) (_ *DB, err error) {
	if opts == nil {
		opts = &Options{}
	}
	mustExist := opts.MustExist || opts.ReadOnly
	if mustExist {
		if !storeIn(dir) {
			return nil, fmt.Errorf("%w %s", ErrNoStore, dir)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	db := &DB{dir: dir, write: pebble.Sync, readOnly: opts.ReadOnly, reserve: opts.Reserve, committed: opts.Committed}
	db.manifest.notify = opts.ManifestSynced
	// Held from here, before anything could write and check the reserve.
	db.space = openSpaceDir(dir)
	defer func() {
		if err != nil {
			db.space.close()
		}
	}()
	if db.reserve == 0 {
		db.reserve = DefaultReserve
	}
	if opts.NoSync {
		db.write = pebble.NoSync
	}
	db.health.init(opts.Logger)
	db.po = db.pebbleOptions(opts, mustExist)
	defer db.recoverFatal(&err)
	pdb, err := pebble.Open(dir, db.po)
	switch {
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		return nil, fmt.Errorf("%w %s", ErrNoStore, dir)
	case err != nil:
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	db.pdb = pdb
	db.health.opened(dir)
	db.manifest.opened(db.health.manifestPath())
	if err := db.loadMeta(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	return db, nil
}

// storeIn reports whether dir holds a Pebble store: Pebble's marker of its
// current MANIFEST (or, in stores older than markers, CURRENT). Checked
// before Pebble opens dir, which would create its lock file in it.
func storeIn(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "marker.manifest.") || e.Name() == "CURRENT" {
			return true
		}
	}
	return false
}

// pebbleOptions are the Pebble options of a store opened with opts.
func (db *DB) pebbleOptions(opts *Options, mustExist bool) *pebble.Options {
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	po := &pebble.Options{
		Logger: slogLogger{l: db.health.log, h: &db.health},
		// Pinned rather than FormatNewest, so a Pebble upgrade never
		// ratchets the on-disk format by itself. It includes WAL sync
		// chunks, which tell a torn tail from corruption on replay.
		FormatMajorVersion: pebble.FormatTableFormatV6,
		CacheSize:          cacheSize,
		ReadOnly:           opts.ReadOnly,
		ErrorIfNotExists:   mustExist,
		// Pebble's defaults for these two end the process; the store
		// reports them instead (Health), and the reads that meet a damaged
		// file fail naming it.
		EventListener: &pebble.EventListener{
			DataCorruption:  db.health.damaged,
			BackgroundError: db.health.background,
			FlushEnd: func(i pebble.FlushInfo) {
				if i.Err == nil {
					db.manifest.synced("")
				}
			},
			CompactionEnd: func(i pebble.CompactionInfo) {
				if i.Err == nil {
					db.manifest.synced("")
				}
			},
			ManifestCreated: func(i pebble.ManifestCreateInfo) {
				if i.Err == nil {
					db.manifest.synced(i.Path)
				}
			},
		},
	}
	po.FS = sizedWALs{vfs.Default}
	if opts.fs != nil {
		po.FS = sizedWALs{opts.fs}
	}
	// Bloom filters keep point lookups of absent keys (dedupe, absence
	// checks) off the disk; every level inherits L0's policy.
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	return po
}

// loadMeta reads the store's layout version, identity and commit count,
// and gives a new store its layout version and identity. A store written
// by a newer layout is refused.
func (db *DB) loadMeta() error {
	r := &Reader{src: db.pdb}
	v, found, err := r.get(metaFormat)
	if err != nil {
		return db.named(fmt.Errorf("pebblekv: read store format: %w", err))
	}
	if found {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("pebblekv: store format %q is unreadable", v)
		}
		if n > storeFormat {
			return fmt.Errorf("pebblekv: the store was written by a newer Open Conduit (layout %d, this build reads %d); run the newer release or restore a backup", n, storeFormat)
		}
	}
	id, _, err := r.get(metaID)
	if err != nil {
		return db.named(fmt.Errorf("pebblekv: read store identity: %w", err))
	}
	c, _, err := r.get(metaCommits)
	if err != nil {
		return db.named(fmt.Errorf("pebblekv: read commit count: %w", err))
	}
	db.id = string(id)
	if len(c) == 8 {
		db.commits.Store(binary.BigEndian.Uint64(c))
		db.applied = db.commits.Load()
	}
	if db.readOnly || (found && db.id != "") {
		return nil
	}
	return db.initMeta(found)
}

// initMeta records a new store's layout version and gives the store its
// identity (a store from before identities gets one too).
func (db *DB) initMeta(hasFormat bool) error {
	b := db.pdb.NewBatch()
	defer b.Close()
	if !hasFormat {
		_ = b.Set(metaFormat, []byte(strconv.Itoa(storeFormat)), nil)
	}
	if db.id == "" {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		db.id = hex.EncodeToString(raw[:])
		_ = b.Set(metaID, []byte(db.id), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblekv: record the store's format: %w", err)
	}
	return nil
}

// ID is the store's identity: random, given when the store was created, and
// never changed. A copy or backup of the store has the same ID; another
// store has another. It is "" only in a store opened ReadOnly that never
// ran read-write.
func (db *DB) ID() string { return db.id }

// Commits is the number of Updates that committed writes since the store
// was created, as recovered at Open and counted since: each counts once it
// is durable.
func (db *DB) Commits() uint64 { return db.commits.Load() }

// Dir is the store's directory.
func (db *DB) Dir() string { return db.dir }

// Close closes the store after every Update and View in flight returns.
// Later calls return ErrClosed. A store that failed (ErrFailed) is left to
// the process's end: Pebble cannot close what it stopped in the middle of.
func (db *DB) Close() error {
	db.life.Lock()
	defer db.life.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	db.space.close()
	if err := db.health.failure(); err != nil {
		return err
	}
	return db.pdb.Close()
}

// Update runs fn in one transaction and commits it if fn returns nil.
//
// # Atomicity
//
// fn's writes go to one Pebble indexed batch: the Tx reads them back, and
// they commit together, synced (pebble.Sync), when fn returns nil. If fn
// returns an error or panics, nothing applies and the error or panic is
// passed on. A batch with no writes commits nothing.
//
// # Serialization and durability
//
// Updates hold the DB's writer mutex from start until Pebble applied the
// batch, so they run one at a time, each seeing every earlier commit. The
// writer mutex is released before the WAL sync is waited for, so Updates
// that commit while a sync runs share the next one (Pebble's group commit);
// Update returns only once its batch is durable, and a durable commit means
// every earlier one is (the WAL is synced in order). As with Pebble's own
// synced commits, a commit is visible to other Views and Updates while its
// sync runs. fn must not call Update or View on the same DB: it would
// deadlock. Read through tx instead.
//
// # Refusals
//
// A batch that would leave less than the reserve free on the store's
// filesystem is refused with protocol.ErrStorageFull, at once and with
// nothing written; the next Update checks again, so writes resume as soon as
// there is room. A read that meets a damaged file returns a *DamageError.
func (db *DB) Update(fn func(tx *Tx) error) (err error) {
	db.life.RLock()
	defer db.life.RUnlock()
	if err := db.usable(); err != nil {
		return err
	}
	if db.readOnly {
		return ErrReadOnly
	}
	defer db.recoverFatal(&err)
	b := db.pdb.NewIndexedBatch()
	defer b.Close()
	n, err := db.apply(b, fn)
	if err != nil || n == 0 {
		return err
	}
	if db.write.Sync {
		if err := b.SyncWait(); err != nil {
			return fmt.Errorf("pebblekv: commit: %w", err)
		}
	}
	db.durable(n)
	return nil
}

// apply runs fn on b under the writer mutex and, unless fn failed or wrote
// nothing, applies b (without waiting for its WAL sync) as commit number
// n; n is 0 when nothing was applied.
func (db *DB) apply(b *pebble.Batch, fn func(tx *Tx) error) (n uint64, err error) {
	db.writer.Lock()
	defer db.writer.Unlock()
	tx := &Tx{Reader: &Reader{src: b}, b: b}
	defer tx.close()
	if err := fn(tx); err != nil {
		return 0, db.named(err)
	}
	if b.Empty() {
		return 0, nil
	}
	n = db.applied + 1
	if err := b.Set(metaCommits, binary.BigEndian.AppendUint64(nil, n), nil); err != nil {
		return 0, fmt.Errorf("pebblekv: set: %w", err)
	}
	if err := db.room(int64(b.Len())); err != nil {
		return 0, err
	}
	if db.write.Sync {
		// Pebble marks ApplyNoSyncWait experimental (CockroachDB's
		// pipelined commits use it); TestUpdatesShareTheWALSync pins what
		// the store relies on, so an upgrade that changes it fails there.
		err = db.pdb.ApplyNoSyncWait(b, db.write)
	} else {
		err = b.Commit(db.write)
	}
	if err != nil {
		return 0, fmt.Errorf("pebblekv: commit: %w", err)
	}
	db.applied = n
	return n, nil
}

// durable records that commit n is durable, and with it every earlier one:
// Commits moves up to n and Options.Committed hears of it, unless a later
// commit was reported first.
func (db *DB) durable(n uint64) {
	db.synced.Lock()
	defer db.synced.Unlock()
	if n <= db.commits.Load() {
		return
	}
	db.commits.Store(n)
	if db.committed != nil {
		db.committed(n)
	}
}

// View runs fn against a consistent snapshot: every read inside it sees the
// same committed state, whatever commits meanwhile.
func (db *DB) View(fn func(r *Reader) error) (err error) {
	db.life.RLock()
	defer db.life.RUnlock()
	if err := db.usable(); err != nil {
		return err
	}
	defer db.recoverFatal(&err)
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	r := &Reader{src: snap}
	defer r.close()
	return db.named(fn(r))
}

// usable refuses a closed or failed store; the caller holds life.
func (db *DB) usable() error {
	if db.closed {
		return ErrClosed
	}
	return db.health.failure()
}

// source is what a Reader reads: a snapshot (View) or an indexed batch over
// the DB (Update).
type source interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// Reader reads one consistent state: a View's snapshot, or an Update's
// batch over the DB. It is valid only during the function it was passed to,
// and not safe for concurrent use.
type Reader struct {
	src  source
	done bool
}

func (r *Reader) close() { r.done = true }

// live refuses a Reader whose View or Update returned: its batch or snapshot
// is closed, and a pooled batch may already serve another Update.
func (r *Reader) live() error {
	if r.done {
		return ErrTxDone
	}
	return nil
}

// get returns a copy of key's value, or found false.
func (r *Reader) get(key []byte) (value []byte, found bool, err error) {
	if err := r.live(); err != nil {
		return nil, false, err
	}
	v, c, err := r.src.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pebblekv: get: %w", err)
	}
	value = append(make([]byte, 0, len(v)), v...)
	if err := c.Close(); err != nil {
		return nil, false, fmt.Errorf("pebblekv: get: %w", err)
	}
	return value, true, nil
}

// scan calls fn for each key in [lower, upper) in order until fn returns
// false or an error. key and value are valid only during the call.
func (r *Reader) scan(lower, upper []byte, fn func(key, value []byte) (bool, error)) error {
	if err := r.live(); err != nil {
		return err
	}
	it, err := r.src.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebblekv: iterate: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("pebblekv: iterate: %w", err)
		}
		more, err := fn(it.Key(), v)
		if err != nil {
			_ = it.Close()
			return err
		}
		if !more {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebblekv: iterate: %w", err)
	}
	return nil
}

// Tx is one Update's transaction: a Reader that sees the Tx's own writes,
// and the writes. It is valid only during the function passed to Update,
// and not safe for concurrent use.
type Tx struct {
	*Reader
	b *pebble.Batch
	// seq is the latest sequence, once read: only this Tx writes it until
	// it commits.
	seq       uint64
	seqLoaded bool
}

func (tx *Tx) set(key, value []byte) error {
	if err := tx.live(); err != nil {
		return err
	}
	if err := tx.b.Set(key, value, nil); err != nil {
		return fmt.Errorf("pebblekv: set: %w", err)
	}
	return nil
}

func (tx *Tx) delete(key []byte) error {
	if err := tx.live(); err != nil {
		return err
	}
	if err := tx.b.Delete(key, nil); err != nil {
		return fmt.Errorf("pebblekv: delete: %w", err)
	}
	return nil
}

// clone returns a copy of b that the caller owns.
func clone(b []byte) []byte { return bytes.Clone(b) }
