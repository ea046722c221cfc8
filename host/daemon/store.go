package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The store's opening rules. A state directory that ran a store remembers
// it in a marker beside the store (not in it, so it outlives the store):
// the store's identity, the last commit the daemon acknowledged, and how
// far the MANIFEST reached when Pebble last synced it. At each start the
// store is first opened read-only and compared with the marker; a store
// that is missing or empty, another store, or one that recovered fewer
// commits or a shorter MANIFEST than the marker records (a truncated or
// damaged WAL or MANIFEST, a restored backup) refuses the start, changing
// no file, until the operator accepts the loss with --accept-store-loss. A
// refusal, not a warning: the daemon would otherwise run its packages at
// once, acting on a state that silently went back in time.
//
// The commit and the MANIFEST's reach are rewritten in place after each
// change, without a sync: a process crash (kill -9) keeps them, so the
// comparison is exact then; after a power loss they may lag the store, so
// a loss just before it can go unnoticed. The marker is synced when the
// daemon stops.

// storeMarkerName is the marker's file in the state directory.
const storeMarkerName = "store.marker"

// Doctor's codes for the store's checks.
const (
	codeStoreUnreadable   = "store_unreadable"
	codeStoreDamaged      = "store_damaged"
	codeStoreFailed       = "store_failed"
	codeStoreLossAccepted = "store_loss_accepted"
)

// storeState is the daemon's side of the store: the marker, what the start
// accepted, and the one deep check that may run at a time.
type storeState struct {
	marker *storeMarker
	// accepted is what --accept-store-loss let the daemon start on, "" when
	// nothing was lost.
	accepted string
	deep     deepCheck
}

// openStore opens the store under the marker's rules (see above) and
// records it in the marker.
func (d *Daemon) openStore() error {
	db, m, accepted, err := openStoreIn(d.dirs.Store(), filepath.Join(d.opts.StateDir, storeMarkerName), d.opts.AcceptStoreLoss, d.logger)
	if err != nil {
		return err
	}
	d.db, d.store.marker, d.store.accepted = db, m, accepted
	return nil
}

// openStoreIn is openStore for a store directory and its marker. accepted
// is the loss --accept-store-loss let it start with, "" when none.
func openStoreIn(dir, markerPath string, accept bool, logger *slog.Logger) (_ *pebblekv.DB, _ *storeMarker, accepted string, _ error) {
	m, err := readMarker(markerPath)
	switch {
	case err != nil && !accept:
		return nil, nil, "", fmt.Errorf("refusing to start: %v. Restore it from a backup with the store, or start once with --accept-store-loss to record the store as it is", err)
	case err != nil:
		accepted = err.Error()
	case m != nil:
		loss, err := compareStore(dir, m, logger)
		if err != nil {
			return nil, nil, "", err
		}
		if loss != "" && !accept {
			return nil, nil, "", fmt.Errorf("refusing to start: %s. Nothing was changed. To go on, restore the store from a backup taken with its marker %s, or start once with --accept-store-loss to run on the store as it is (a store restored without its marker needs the flag too); the marker then records the store", loss, markerPath)
		}
		accepted = loss
	}
	marker := &storeMarker{path: markerPath, log: logger}
	db, err := pebblekv.Open(dir, &pebblekv.Options{Logger: logger, Committed: marker.record, ManifestSynced: marker.recordManifest})
	if err != nil {
		return nil, nil, "", fmt.Errorf("opening the store in %s: %w", dir, err)
	}
	if err := marker.write(db.ID(), db.Commits(), db.Manifest()); err != nil {
		_ = db.Close()
		return nil, nil, "", err
	}
	if accepted != "" {
		logger.Warn("started with --accept-store-loss on the store as it is", "store", dir, "accepted", accepted)
	}
	return db, marker, accepted, nil
}

// compareStore opens the store read-only and says what it lost against the
// marker: "" when nothing. An error is a store that cannot be opened at all.
func compareStore(dir string, m *storeMarker, logger *slog.Logger) (string, error) {
	ro, err := pebblekv.Open(dir, &pebblekv.Options{ReadOnly: true, Logger: logger})
	switch {
	case errors.Is(err, pebblekv.ErrNoStore):
		return fmt.Sprintf("the store %s is missing or empty, but this state directory ran store %s up to commit %d", dir, m.id, m.commit), nil
	case err != nil:
		return "", fmt.Errorf("refusing to start: the store in %s cannot be opened: %w. Restore the store from a backup; to begin an empty store instead, move it aside (mv %s %s.damaged) and start once with --accept-store-loss", dir, err, dir, dir)
	}
	defer ro.Close()
	rec := ro.Recovery()
	why := manifestLoss(rec, m.manifest)
	switch {
	case ro.ID() == "" && why == "":
		return fmt.Sprintf("the store %s holds nothing this state directory wrote (it ran store %s up to commit %d): it was emptied or replaced", dir, m.id, m.commit), nil
	case ro.ID() == "":
		return fmt.Sprintf("the store %s recovered to nothing this state directory wrote (it ran store %s up to commit %d): %s", dir, m.id, m.commit, why), nil
	case ro.ID() != m.id:
		return fmt.Sprintf("the store %s is store %s, not store %s, which this state directory ran up to commit %d", dir, ro.ID(), m.id, m.commit), nil
	case ro.Commits() < m.commit:
		if why == "" {
			why = describeRecovery(rec)
		}
		return fmt.Sprintf("the store %s recovered to commit %d, but this state directory recorded commit %d as acknowledged: the last %d commits are missing; %s",
			dir, ro.Commits(), m.commit, m.commit-ro.Commits(), why), nil
	}
	return why, nil
}

// manifestLoss says how the MANIFEST Pebble recovered from falls short of
// what the marker recorded synced: "" when it does not. Edits lost from a
// MANIFEST lose the files they added even when the last commits survive
// in the WAL, so the commit count alone cannot tell.
func manifestLoss(rec pebblekv.Recovery, synced pebblekv.ManifestMark) string {
	got := pebblekv.ManifestMark{Name: filepath.Base(rec.Manifest), Size: rec.ManifestSize}
	switch {
	case synced.Name == "" || rec.Manifest == "":
		return ""
	case got.Number() < synced.Number():
		return fmt.Sprintf("Pebble recovered the store from %s, but it had moved on to %s: the MANIFEST's marker went back, and every edit after it is missing", rec.Manifest, synced.Name)
	case got.Number() > synced.Number():
		return ""
	case rec.ManifestSize < synced.Size:
		return fmt.Sprintf("the MANIFEST %s is %d bytes, but %d bytes of it were synced: it was truncated at offset %d, and the edits after it (the store files they added) are missing", rec.Manifest, rec.ManifestSize, synced.Size, rec.ManifestSize)
	case rec.ManifestValid < synced.Size:
		return fmt.Sprintf("the MANIFEST %s is damaged at offset %d (of %d synced bytes): Pebble ignores every edit from there on, and the store files they added are missing", rec.Manifest, rec.ManifestValid, synced.Size)
	}
	return ""
}

// describeRecovery says where Pebble's recovery stopped short, naming each
// WAL and offset, or, when every WAL was read to its end, where else the
// commits went.
func describeRecovery(rec pebblekv.Recovery) string {
	var short []string
	for _, r := range rec.Replays {
		if r.Unread() > 0 {
			short = append(short, fmt.Sprintf("Pebble stopped reading the WAL %s at offset %d of the %d bytes written (a truncated or damaged WAL: it reads nothing after the first record it cannot)", r.WAL, r.Offset, r.End))
		}
	}
	if len(short) > 0 {
		return strings.Join(short, "; ")
	}
	manifest := rec.Manifest
	if manifest == "" {
		manifest = "the MANIFEST"
	}
	return fmt.Sprintf("Pebble read every WAL to its end, so the commits went with %s (a truncated or damaged MANIFEST, or a missing sstable) or the store was restored from an older backup", manifest)
}

// storeMarker is the state directory's record of the store it ran: its
// identity, the last commit acknowledged, and how far its MANIFEST reached
// when Pebble last synced it.
type storeMarker struct {
	path     string
	id       string
	commit   uint64
	manifest pebblekv.ManifestMark
	log      *slog.Logger

	mu sync.Mutex
	// f is the marker, open while the daemon runs, for record.
	f *os.File
	// failed is set once a write failed (logged then), so a failing disk
	// costs one line.
	failed bool
}

// markerHeader is the marker's first line. The layout after it is fixed
// (the identity's length aside), so the commit and the MANIFEST's reach
// are rewritten in place.
const markerHeader = "open-conduit store marker 1\n"

// commitDigits and nameWidth are the fields' widths in the marker.
const (
	commitDigits = 20
	nameWidth    = 24
)

// markerText is the marker's content.
func markerText(id string, commit uint64, mf pebblekv.ManifestMark) string {
	return fmt.Sprintf("%sstore %s\ncommit %s\nmanifest %s\n# open-conduit serve compares the store with this at each start; do not edit it.\n",
		markerHeader, id, commitField(commit), manifestField(mf))
}

func commitField(commit uint64) string { return fmt.Sprintf("%0*d", commitDigits, commit) }

func manifestField(mf pebblekv.ManifestMark) string {
	return fmt.Sprintf("%-*s %0*d", nameWidth, mf.Name, commitDigits, mf.Size)
}

// commitOffset is where the commit's digits start, and manifestOffset the
// MANIFEST's name.
func commitOffset(id string) int64 {
	return int64(len(markerHeader) + len("store \n") + len(id) + len("commit "))
}

func manifestOffset(id string) int64 {
	return commitOffset(id) + commitDigits + int64(len("\nmanifest "))
}

// readMarker reads the marker at path; nil, nil when there is none (a state
// directory that never ran a store, or ran it before markers).
func readMarker(path string) (*storeMarker, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the store marker %s cannot be read (%v)", path, err)
	}
	bad := fmt.Errorf("the store marker %s is not one open-conduit wrote", path)
	lines := strings.Split(string(data), "\n")
	if len(lines) < 4 || lines[0]+"\n" != markerHeader {
		return nil, bad
	}
	id, ok1 := strings.CutPrefix(lines[1], "store ")
	digits, ok2 := strings.CutPrefix(lines[2], "commit ")
	mf, ok3 := strings.CutPrefix(lines[3], "manifest ")
	fields := strings.Fields(mf)
	if !ok1 || !ok2 || !ok3 || id == "" || len(fields) != 2 {
		return nil, bad
	}
	commit, err1 := strconv.ParseUint(digits, 10, 64)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	return &storeMarker{path: path, id: id, commit: commit, manifest: pebblekv.ManifestMark{Name: fields[0], Size: size}}, nil
}

// write replaces the marker with the store's identity, commit and
// MANIFEST (synced, then renamed over the old one) and keeps it open for
// record.
func (m *storeMarker) write(id string, commit uint64, mf pebblekv.ManifestMark) error {
	tmp := m.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing the store marker: %w", err)
	}
	_, err = f.WriteString(markerText(id, commit, mf))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, m.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(m.path))
	}
	if err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("writing the store marker %s: %w", m.path, err)
	}
	m.mu.Lock()
	m.id, m.commit, m.manifest, m.f = id, commit, mf, f
	m.mu.Unlock()
	return nil
}

// record writes commit into the marker in place, unsynced. The store calls
// it after each synced commit, in order.
func (m *storeMarker) record(commit uint64) {
	m.writeAt(commitField(commit), commitOffset)
}

// recordManifest writes how far the MANIFEST reaches into the marker in
// place, unsynced. The store calls it after Pebble synced the MANIFEST.
func (m *storeMarker) recordManifest(mf pebblekv.ManifestMark) {
	if len(mf.Name) > nameWidth {
		return
	}
	m.writeAt(manifestField(mf), manifestOffset)
}

func (m *storeMarker) writeAt(field string, offset func(id string) int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil || m.failed {
		return
	}
	if _, err := m.f.WriteAt([]byte(field), offset(m.id)); err != nil {
		m.failed = true
		m.log.Error("the store marker could not record how far the store got; the next start compares the store with an older record", "marker", m.path, "err", err)
	}
}

// close syncs and closes the marker.
func (m *storeMarker) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f != nil {
		_ = m.f.Sync()
		_ = m.f.Close()
		m.f = nil
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// deepTimeout bounds how long doctor waits for the store's deep check,
// inside the client's 60 s request timeout. A check still running then
// logs its findings when it ends.
const deepTimeout = 45 * time.Second

// deepCheck lets one deep check run at a time: each reads the whole store.
type deepCheck struct{ running atomic.Bool }

func (c *deepCheck) begin() bool { return c.running.CompareAndSwap(false, true) }

func (c *deepCheck) end() { c.running.Store(false) }

// storeChecks are doctor's checks of the store: its state, what the start
// accepted, and, when deep, the whole store read.
func (d *Daemon) storeChecks(ctx context.Context, deep bool) []client.Check {
	out := []client.Check{d.storeCheck()}
	if d.store.accepted != "" {
		out = append(out, client.Check{Name: "store recovery", Status: protocol.CheckWarn, Code: codeStoreLossAccepted,
			Detail: "this daemon started with --accept-store-loss: " + d.store.accepted,
			Remedy: "restore the store from a backup if those writes matter; this warning lasts until the daemon restarts"})
	}
	if deep {
		out = append(out, d.deepStoreCheck(ctx))
	}
	return out
}

// storeCheck is the store's state: a failure, damaged files, the disk
// under the reserve, or the log's sequence and the commit count.
func (d *Daemon) storeCheck() client.Check {
	c := client.Check{Name: "store", Status: protocol.CheckFail}
	var seq uint64
	err := d.db.View(func(r *pebblekv.Reader) error {
		var err error
		seq, err = r.LatestSequence()
		return err
	})
	h := d.db.Health()
	switch {
	case h.Failed != nil:
		c.Code, c.Detail = codeStoreFailed, h.Failed.Error()
		c.Remedy = "restart the daemon, after freeing space if the disk is full: the store recovers every acknowledged write from its WAL"
		return c
	case len(h.Damaged) > 0:
		c.Code, c.Detail, c.Remedy = codeStoreDamaged, describeDamage(h.Damaged), remedyDamaged
		return c
	case err != nil:
		c.Code, c.Detail = codeStoreUnreadable, err.Error()
		return c
	}
	c.Status = protocol.CheckOK
	c.Detail = fmt.Sprintf("%s, event log at sequence %d, commit %d", d.dirs.Store(), seq, d.db.Commits())
	free, reserve, err := d.db.Space()
	if err != nil {
		return c
	}
	c.Detail += fmt.Sprintf(", %s free", mib(free))
	if reserve >= 0 && free < reserve {
		c.Status, c.Code = protocol.CheckWarn, protocol.CodeStorageFull
		c.Detail += fmt.Sprintf(", under the %s the store keeps free: writes are refused (storage_full) until there is more", mib(reserve))
		c.Remedy = "free space on the disk holding the store; writes resume by themselves, with no restart"
	}
	return c
}

// remedyDamaged is what to do about a damaged store file.
const remedyDamaged = "restore the store from a backup; until then what the damaged files hold cannot be read, the rest can. open-conduit doctor --deep reads every file of the store"

func describeDamage(ds []pebblekv.Damage) string {
	parts := make([]string, len(ds))
	for i, dm := range ds {
		parts[i] = fmt.Sprintf("%s is damaged (%s)", dm.Path, dm.Detail)
		if dm.Path == "" {
			parts[i] = "damaged: " + dm.Detail
		}
	}
	return strings.Join(parts, "; ")
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// deepStoreCheck reads the whole store (pebblekv.DB.Check), waiting for it
// up to deepTimeout.
func (d *Daemon) deepStoreCheck(ctx context.Context) client.Check {
	c := client.Check{Name: "store deep check", Status: protocol.CheckWarn, Code: protocol.CodeUnavailable}
	if !d.store.deep.begin() {
		c.Detail = "another deep check of the store is running; ask again once it has answered"
		return c
	}
	type result struct {
		res pebblekv.CheckResult
		err error
	}
	done := make(chan result, 1)
	cctx, cancel := context.WithTimeout(ctx, deepTimeout)
	defer cancel()
	go func() {
		defer d.store.deep.end()
		res, err := d.db.Check(cctx)
		done <- result{res, err}
		if cctx.Err() != nil && err == nil && len(res.Damaged) > 0 {
			d.logger.Error("store deep check: damaged files", "damaged", describeDamage(res.Damaged))
		}
	}()
	var r result
	select {
	case r = <-done:
	case <-cctx.Done():
		c.Detail = fmt.Sprintf("the deep check did not finish within %s; it logs damaged files when it ends", deepTimeout)
		return c
	}
	switch {
	case r.err != nil:
		c.Detail = "the deep check could not run: " + r.err.Error()
	case len(r.res.Damaged) > 0:
		c.Status, c.Code, c.Detail, c.Remedy = protocol.CheckFail, codeStoreDamaged, describeDamage(r.res.Damaged), remedyDamaged
	default:
		c.Status, c.Code = protocol.CheckOK, ""
		c.Detail = fmt.Sprintf("every block of %d store files matches its checksum, and Pebble's level check read %d keys in order", r.res.Tables, r.res.Points)
	}
	return c
}
