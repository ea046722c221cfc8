package pebblekv

import (
	"fmt"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Artifact states.
const (
	// ArtifactOpen: chunks are still arriving.
	ArtifactOpen = "open"
	// ArtifactCommitted: the bytes are in the content-addressed store
	// under Digest.
	ArtifactCommitted = "committed"
)

// Artifact is one output an execution wrote: open while chunks arrive,
// committed with its content's SHA-256 (the content-addressed store's
// name for its bytes).
type Artifact struct {
	ID        string    `json:"id"`
	Execution string    `json:"execution_id,omitempty"`
	Work      string    `json:"work_id,omitempty"`
	Package   string    `json:"package"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type,omitempty"`
	Size      int64     `json:"size"`
	Digest    string    `json:"digest,omitempty"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Committed time.Time `json:"committed,omitzero"`
}

// Keys of artifact records and their indexes (see the package doc's
// table).
func artifactRecKey(id string) []byte { return famKey(famArtifactRec, id) }

func artifactExecKey(execution, id string) []byte {
	return famKey(famArtifactExec, id, execution)
}

func artifactWorkKey(work, id string) []byte { return famKey(famArtifactWork, id, work) }

// indexKeys are the index entries of a: by execution and by Work, for
// those it names.
func (a Artifact) indexKeys() [][2][]byte {
	var out [][2][]byte
	if a.Execution != "" {
		out = append(out, [2][]byte{artifactExecKey(a.Execution, a.ID), nil})
	}
	if a.Work != "" {
		out = append(out, [2][]byte{artifactWorkKey(a.Work, a.ID), nil})
	}
	return out
}

// check refuses an artifact the store cannot index or answer.
func (a Artifact) check() error {
	switch {
	case a.ID == "":
		return protocol.Errorf(protocol.ErrInvalid, "an artifact needs an ID (NewArtifactID)")
	case a.Package == "" || a.Name == "":
		return protocol.Errorf(protocol.ErrInvalid, "artifact %s needs its package and name", a.ID)
	case len(a.Name) > protocol.MaxKeyBytes:
		return protocol.Errorf(protocol.ErrInvalid, "artifact %s's name is %d bytes; keep it within %d", a.ID, len(a.Name), protocol.MaxKeyBytes)
	case a.Size < 0:
		return protocol.Errorf(protocol.ErrInvalid, "artifact %s has size %d", a.ID, a.Size)
	case a.State != ArtifactOpen && a.State != ArtifactCommitted:
		return protocol.Errorf(protocol.ErrInvalid, "artifact %s has state %q; use open or committed", a.ID, a.State)
	case a.State == ArtifactCommitted && !isHexDigest(a.Digest):
		return protocol.Errorf(protocol.ErrInvalid, "committed artifact %s needs its digest: the hex SHA-256 of its bytes", a.ID)
	}
	return nil
}

// PutArtifact writes a and its indexes (by execution, by Work), removing
// the entries of the record it replaces, in tx's one batch.
//
// # Refusals
//
// An artifact without an ID, a package or a name, with a name over
// protocol.MaxKeyBytes, a negative size or an unknown state, or committed
// without a digest (64 lower-case hex digits), is protocol.ErrInvalid; so
// is one that changes the stored record's execution, Work or package. A
// committed artifact opened again is protocol.ErrConflict. A refusal
// writes nothing.
func (tx *Tx) PutArtifact(a Artifact) error {
	if err := a.check(); err != nil {
		return err
	}
	old, had, err := tx.Artifact(a.ID)
	if err != nil {
		return err
	}
	switch {
	case had && (old.Execution != a.Execution || old.Work != a.Work || old.Package != a.Package):
		return protocol.Errorf(protocol.ErrInvalid, "artifact %s is %s's, of execution %q and Work %q; an artifact never moves", a.ID, old.Package, old.Execution, old.Work)
	case had && old.State == ArtifactCommitted && a.State == ArtifactOpen:
		return protocol.Errorf(protocol.ErrConflict, "artifact %s is committed; create a new artifact to write more", a.ID)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("pebblekv: encode artifact %s: %w", a.ID, err)
	}
	var stale [][2][]byte
	if had {
		stale = old.indexKeys()
	}
	return tx.rewrite(stale, append(a.indexKeys(), [2][]byte{artifactRecKey(a.ID), raw}))
}

// Artifact reads one artifact; found false means there is none.
func (r *Reader) Artifact(id string) (a Artifact, found bool, err error) {
	if id == "" {
		return Artifact{}, false, nil
	}
	raw, found, err := r.get(artifactRecKey(id))
	if err != nil || !found {
		return Artifact{}, false, err
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Artifact{}, false, fmt.Errorf("pebblekv: decode artifact %s: %w", id, err)
	}
	return a, true, nil
}

// ArtifactsOf lists an execution's artifacts in ID order (about creation
// order).
func (r *Reader) ArtifactsOf(execution string) ([]Artifact, error) {
	if execution == "" {
		return []Artifact{}, nil
	}
	return r.artifactsUnder(famKey(famArtifactExec, "", execution))
}

// ArtifactsOfWork lists a Work's artifacts, of all its executions, in ID
// order (about creation order).
func (r *Reader) ArtifactsOfWork(work string) ([]Artifact, error) {
	if work == "" {
		return []Artifact{}, nil
	}
	return r.artifactsUnder(famKey(famArtifactWork, "", work))
}

// artifactsUnder reads the artifacts an index names under prefix.
func (r *Reader) artifactsUnder(prefix []byte) ([]Artifact, error) {
	out := []Artifact{}
	err := r.scan(prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		id := string(k[len(prefix):])
		a, found, err := r.Artifact(id)
		if err == nil && !found {
			err = fmt.Errorf("pebblekv: an artifact index names artifact %s, which does not exist", id)
		}
		out = append(out, a)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
