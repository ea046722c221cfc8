// Package artifacts is the daemon's content-addressed artifact store: the
// host side of artifact.create, artifact.write, artifact.commit and
// artifact.abort, and the reading of what was committed.
//
// An open writer's bytes go to a partial file under <dir>/tmp, one chunk at
// a time, each at the offset the writer says it is at (any other offset is
// a conflict, so a chunk sent twice is never written twice). Commit syncs
// the file, checks the digest the writer gives, and renames it to
// <dir>/sha256/<hex of its SHA-256>, where equal contents share one file;
// only then is the record (pebblekv.Artifact) written, committed, so a
// record always names bytes that are on disk and an abandoned writer
// leaves no record at all. Files are 0600 in 0700 directories. A writer
// lives as long as the daemon run: the partial files are removed at Open
// and at Close.
//
// An artifact belongs to the package that created it: only that package
// writes, commits or aborts it (to another it is not found), and one
// naming an execution names one of that package's own executions, whose
// Work the artifact is then listed under.
package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Store keeps artifacts under one directory, their records in the store.
// It is safe for concurrent use.
type Store struct {
	db  *pebblekv.DB
	dir string
	now func() time.Time
	// aheadWait bounds how long Write holds a chunk that arrived ahead of
	// the bytes written (protocol.ArtifactAheadWaitMillis).
	aheadWait time.Duration

	mu     sync.Mutex
	open   map[string]*writer
	closed bool
}

// writer is one open artifact: its partial file and what was written.
type writer struct {
	mu sync.Mutex
	// order holds a chunk that arrived ahead of the bytes written.
	order protocol.ChunkOrder
	rec   pebblekv.Artifact
	f     *os.File
	sum   hash.Hash // SHA-256, the content address
	crc   uint32    // CRC-32 (IEEE), for a commit that gives one
	size  int64
	done  bool
}

// Open makes a store in dir (created 0700 with its sha256 and tmp
// directories), removing what a writer of an earlier run left in tmp.
func Open(db *pebblekv.DB, dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "sha256"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating the artifact directory %s: %w", d, err)
		}
	}
	s := &Store{db: db, dir: dir, now: time.Now, aheadWait: protocol.ArtifactAheadWaitMillis * time.Millisecond, open: map[string]*writer{}}
	if err := s.clearTmp(); err != nil {
		return nil, err
	}
	return s, nil
}

// clearTmp removes every partial file.
func (s *Store) clearTmp() error {
	tmp := filepath.Join(s.dir, "tmp")
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return fmt.Errorf("reading %s: %w", tmp, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return fmt.Errorf("removing a partial artifact: %w", err)
		}
	}
	return nil
}

// Close abandons every open writer and removes its partial file; a create
// afterwards is shutting_down.
func (s *Store) Close() error {
	s.mu.Lock()
	ws := s.open
	s.open, s.closed = map[string]*writer{}, true
	s.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		w.discard(s.dir)
		w.mu.Unlock()
	}
	return nil
}

// Create opens a writer for pkg; nothing is recorded until it commits. An
// execution it names must be one of pkg's own (another package's, or an
// unknown one, is not_found). A package with MaxOpenArtifacts writers open
// is overloaded.
func (s *Store) Create(pkg string, p protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
	if err := protocol.CheckArtifactCreate(p); err != nil {
		return protocol.ArtifactCreateResult{}, err
	}
	rec := pebblekv.Artifact{
		ID: pebblekv.NewArtifactID(), Execution: p.Execution, Package: pkg, Name: p.Name,
		MediaType: p.MediaType, State: pebblekv.ArtifactOpen, Created: s.now().UTC(),
	}
	if rec.ID == "" {
		return protocol.ArtifactCreateResult{}, errors.New("artifacts: the store gives no artifact IDs")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return protocol.ArtifactCreateResult{}, protocol.Errorf(protocol.ErrShuttingDown, "artifact.create: the daemon is stopping")
	}
	if n := s.openBy(pkg); n >= protocol.MaxOpenArtifacts {
		return protocol.ArtifactCreateResult{}, protocol.Errorf(protocol.ErrOverloaded,
			"artifact.create: %s has %d artifacts open; commit or abort one first", pkg, n)
	}
	if p.Execution != "" {
		err := s.db.View(func(r *pebblekv.Reader) error {
			x, found, err := r.Execution(p.Execution)
			if err != nil {
				return err
			}
			if !found || x.Package != pkg {
				return protocol.Errorf(protocol.ErrNotFound, "artifact.create: no execution %q of %s's executors", p.Execution, pkg)
			}
			rec.Work = x.Work
			return nil
		})
		if err != nil {
			return protocol.ArtifactCreateResult{}, err
		}
	}
	f, err := os.OpenFile(s.tmpPath(rec.ID), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return protocol.ArtifactCreateResult{}, fmt.Errorf("artifact.create: opening its file: %w", err)
	}
	s.open[rec.ID] = &writer{rec: rec, f: f, sum: sha256.New()}
	return protocol.ArtifactCreateResult{Artifact: rec.ID}, nil
}

// openBy counts pkg's open writers; s.mu is held.
func (s *Store) openBy(pkg string) int {
	n := 0
	for _, w := range s.open {
		if w.rec.Package == pkg {
			n++
		}
	}
	return n
}

// writerOf is pkg's open writer id; another package's is not found, as an
// unknown one is, so a package learns nothing of another's artifacts.
func (s *Store) writerOf(pkg, id, method string) (*writer, error) {
	s.mu.Lock()
	w, ok := s.open[id]
	s.mu.Unlock()
	if !ok || w.rec.Package != pkg {
		return nil, protocol.Errorf(protocol.ErrNotFound, "%s: artifact %q is not open: create one with artifact.create", method, id)
	}
	return w, nil
}

// Write appends one chunk at p.Offset, which must be the bytes written so
// far. The host announces protocol.ArtifactWindow, so the next chunk may
// arrive, and be served on another goroutine, while one is still being
// written: a chunk ahead of the bytes written waits for the chunks before
// it, until ctx ends or for at most the store's bound, and then lands or is
// refused conflict as any chunk at the wrong offset is.
func (s *Store) Write(ctx context.Context, pkg string, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
	if err := protocol.CheckArtifactChunk(p); err != nil {
		return protocol.ArtifactWriteResult{}, err
	}
	w, err := s.writerOf(pkg, p.Artifact, protocol.MethodArtifactWrite)
	if err != nil {
		return protocol.ArtifactWriteResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.order.Await(ctx, &w.mu, p, s.aheadWait, func() bool { return !w.done && p.Offset > w.size }); err != nil {
		return protocol.ArtifactWriteResult{}, err
	}
	switch {
	case w.done:
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrNotFound, "artifact.write: artifact %q is not open any more", p.Artifact)
	case p.Offset != w.size:
		return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict,
			"artifact.write: artifact %s: a chunk at offset %d, but %d bytes are written; send the chunk at %d", p.Artifact, p.Offset, w.size, w.size)
	}
	if _, err := w.f.Write(p.Data); err != nil {
		// The file may hold part of the chunk: the writer cannot go on.
		s.drop(w)
		return protocol.ArtifactWriteResult{}, fmt.Errorf("artifact.write: writing artifact %s failed, and it is abandoned: %w", p.Artifact, err)
	}
	w.sum.Write(p.Data)
	w.crc = crc32.Update(w.crc, crc32.IEEETable, p.Data)
	w.size += int64(len(p.Data))
	w.order.Moved()
	return protocol.ArtifactWriteResult{Size: w.size}, nil
}

// Commit moves a writer's bytes into the content-addressed store and
// commits its record. A digest given must be the SHA-256 of every byte
// (else conflict, and the writer stays open). Committing a committed
// artifact again answers it again, so a commit whose answer was lost can
// be retried.
func (s *Store) Commit(pkg string, p protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
	w, err := s.writerOf(pkg, p.Artifact, protocol.MethodArtifactCommit)
	if err != nil {
		return s.committed(pkg, p.Artifact, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return s.committed(pkg, p.Artifact, protocol.Errorf(protocol.ErrNotFound, "artifact.commit: artifact %q is not open", p.Artifact))
	}
	digest := hex.EncodeToString(w.sum.Sum(nil))
	if err := protocol.CheckArtifactCommit(p, w.size, digest, w.crc); err != nil {
		return protocol.ArtifactCommitResult{}, err
	}
	if err := s.place(w, digest); err != nil {
		s.drop(w)
		return protocol.ArtifactCommitResult{}, fmt.Errorf("artifact.commit: artifact %s is abandoned: %w", p.Artifact, err)
	}
	rec := w.rec
	rec.Size, rec.Digest, rec.State, rec.Committed = w.size, digest, pebblekv.ArtifactCommitted, s.now().UTC()
	if err := s.db.Update(func(tx *pebblekv.Tx) error { return tx.PutArtifact(rec) }); err != nil {
		// The bytes stay in the content store, where equal contents share
		// a file; the writer is gone with the record unwritten.
		s.forget(w)
		return protocol.ArtifactCommitResult{}, fmt.Errorf("artifact.commit: recording artifact %s: %w", p.Artifact, err)
	}
	s.forget(w)
	return protocol.ArtifactCommitResult{Artifact: rec.ID, Size: rec.Size, Digest: rec.Digest}, nil
}

// committed answers a commit of pkg's artifact id that is committed
// already; anything else is notOpen.
func (s *Store) committed(pkg, id string, notOpen error) (protocol.ArtifactCommitResult, error) {
	var (
		a     pebblekv.Artifact
		found bool
	)
	err := s.db.View(func(r *pebblekv.Reader) (err error) {
		a, found, err = r.Artifact(id)
		return err
	})
	if err != nil {
		return protocol.ArtifactCommitResult{}, err
	}
	if !found || a.Package != pkg || a.State != pebblekv.ArtifactCommitted {
		return protocol.ArtifactCommitResult{}, notOpen
	}
	return protocol.ArtifactCommitResult{Artifact: a.ID, Size: a.Size, Digest: a.Digest}, nil
}

// place syncs w's file and renames it to its content address; equal
// contents already there keep theirs.
func (s *Store) place(w *writer, digest string) error {
	if err := w.f.Sync(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	w.f = nil
	dst := s.blobPath(digest)
	if _, err := os.Stat(dst); err == nil {
		return os.Remove(s.tmpPath(w.rec.ID))
	}
	if err := os.Rename(s.tmpPath(w.rec.ID), dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// Abort abandons pkg's open writer and removes its bytes; nothing of it
// is recorded. Aborting what is not open (unknown, another package's,
// committed, aborted, or open in an earlier run) changes nothing and is no
// error, so an abort can be retried.
func (s *Store) Abort(pkg string, p protocol.ArtifactAbortParams) error {
	w, err := s.writerOf(pkg, p.Artifact, protocol.MethodArtifactAbort)
	if err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		s.drop(w)
	}
	return nil
}

// drop abandons w: its file removed, the writer forgotten; w.mu is held.
func (s *Store) drop(w *writer) {
	w.discard(s.dir)
	s.forget(w)
}

// forget removes w from the open writers; w.mu is held.
func (s *Store) forget(w *writer) {
	w.done = true
	w.order.Moved()
	s.mu.Lock()
	delete(s.open, w.rec.ID)
	s.mu.Unlock()
}

// discard closes and removes w's partial file; w.mu is held.
func (w *writer) discard(dir string) {
	w.done = true
	w.order.Moved()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	_ = os.Remove(filepath.Join(dir, "tmp", w.rec.ID))
}

// Read opens a committed artifact's bytes, with its record. An unknown
// artifact is not_found; one not committed (open, or aborted) is conflict.
func (s *Store) Read(id string) (pebblekv.Artifact, *os.File, error) {
	var (
		a     pebblekv.Artifact
		found bool
	)
	err := s.db.View(func(r *pebblekv.Reader) (err error) {
		a, found, err = r.Artifact(id)
		return err
	})
	switch {
	case err != nil:
		return a, nil, fmt.Errorf("reading artifact %s: %w", id, err)
	case !found:
		return a, nil, protocol.Errorf(protocol.ErrNotFound, "no artifact %q; 'open-conduit work artifacts WORK' lists a Work's", id)
	case a.State != pebblekv.ArtifactCommitted:
		return a, nil, protocol.Errorf(protocol.ErrConflict, "artifact %s is %s, not committed: it has no bytes to read", id, a.State)
	}
	f, err := os.Open(s.blobPath(a.Digest))
	if err != nil {
		return a, nil, fmt.Errorf("opening the bytes of artifact %s: %w", id, err)
	}
	return a, f, nil
}

// tmpPath is where an open writer's bytes go.
func (s *Store) tmpPath(id string) string { return filepath.Join(s.dir, "tmp", id) }

// blobPath is where the bytes with a digest are kept.
func (s *Store) blobPath(digest string) string { return filepath.Join(s.dir, "sha256", digest) }

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
