package pebblekv

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// artifact is an open artifact of execution and work.
func artifact(id, execution, work string) Artifact {
	return Artifact{ID: id, Execution: execution, Work: work, Package: "runner", Name: id + ".log", State: ArtifactOpen, Created: t0}
}

// committed is a committed with the digest of content.
func committed(a Artifact, content string) Artifact {
	sum := sha256.Sum256([]byte(content))
	a.State, a.Digest, a.Size, a.Committed = ArtifactCommitted, hex.EncodeToString(sum[:]), int64(len(content)), t0
	return a
}

func putArtifacts(t *testing.T, db *DB, as ...Artifact) {
	t.Helper()
	update(t, db, func(tx *Tx) error {
		for _, a := range as {
			if err := tx.PutArtifact(a); err != nil {
				return err
			}
		}
		return nil
	})
}

func artifactIDs(as []Artifact) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func TestArtifactsAreListedByExecutionAndByWork(t *testing.T) {
	db := openDB(t, nil)
	putArtifacts(t, db,
		artifact("a_3", "x_2", "w1"), artifact("a_1", "x_1", "w1"), artifact("a_2", "x_1", "w1"),
		artifact("a_4", "x_1x", "w1x"), artifact("a_5", "", "w1"), artifact("a_6", "x_9", ""))
	// Committing rewrites the record and must keep its index entries.
	putArtifacts(t, db, committed(artifact("a_2", "x_1", "w1"), "hello"))
	for _, tc := range []struct {
		name   string
		byWork bool
		key    string
		want   []string
	}{
		{"an execution's artifacts in ID order", false, "x_1", []string{"a_1", "a_2"}},
		{"an execution whose ID another's begins with", false, "x_1x", []string{"a_4"}},
		{"an artifact without a Work is its execution's", false, "x_9", []string{"a_6"}},
		{"an unknown execution has none", false, "x_unknown", []string{}},
		{"no execution, none", false, "", []string{}},
		{"a Work's artifacts of every execution, and its own", true, "w1", []string{"a_1", "a_2", "a_3", "a_5"}},
		{"a Work whose ID another's begins with", true, "w1x", []string{"a_4"}},
		{"an unknown Work has none", true, "w-unknown", []string{}},
		{"no Work, none", true, "", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			view(t, db, func(r *Reader) error {
				var as []Artifact
				var err error
				if tc.byWork {
					as, err = r.ArtifactsOfWork(tc.key)
				} else {
					as, err = r.ArtifactsOf(tc.key)
				}
				got = artifactIDs(as)
				return err
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got, want := len(rawKeys(t, db, famArtifactExec)), 5; got != want {
		t.Errorf("by-execution index has %d entries, want %d", got, want)
	}
}

func TestPutArtifactRefusesInvalidArtifactsAndWritesNothing(t *testing.T) {
	base := artifact("a_1", "x_1", "w1")
	done := committed(base, "hello")
	with := func(a Artifact, f func(*Artifact)) Artifact { f(&a); return a }
	for _, tc := range []struct {
		name string
		a    Artifact
		want *protocol.Error
	}{
		{"no ID", with(base, func(a *Artifact) { a.ID = "" }), protocol.ErrInvalid},
		{"no package", with(base, func(a *Artifact) { a.Package = "" }), protocol.ErrInvalid},
		{"no name", with(base, func(a *Artifact) { a.Name = "" }), protocol.ErrInvalid},
		{"a name over MaxKeyBytes", with(base, func(a *Artifact) { a.Name = strings.Repeat("n", protocol.MaxKeyBytes+1) }), protocol.ErrInvalid},
		{"a negative size", with(base, func(a *Artifact) { a.Size = -1 }), protocol.ErrInvalid},
		{"an unknown state", with(base, func(a *Artifact) { a.State = "closed" }), protocol.ErrInvalid},
		{"committed without a digest", with(done, func(a *Artifact) { a.Digest = "" }), protocol.ErrInvalid},
		{"moved to another execution", with(done, func(a *Artifact) { a.Execution = "x_2" }), protocol.ErrInvalid},
		{"moved to another Work", with(done, func(a *Artifact) { a.Work = "w2" }), protocol.ErrInvalid},
		{"moved to another package", with(done, func(a *Artifact) { a.Package = "shell" }), protocol.ErrInvalid},
		{"opened again once committed", base, protocol.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			putArtifacts(t, db, base, done)
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutArtifact(tc.a); return nil })
			wantCode(t, err, tc.want)
			if !maps.Equal(before, dump(t, db)) {
				t.Error("a refused PutArtifact changed the store")
			}
		})
	}
}
