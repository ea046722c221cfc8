package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/pebblekv"
)

// storeFixture is a state directory's store and marker.
type storeFixture struct{ dir, marker string }

func newStoreFixture(t *testing.T) storeFixture {
	state := t.TempDir()
	return storeFixture{dir: filepath.Join(state, "store"), marker: filepath.Join(state, storeMarkerName)}
}

// open opens the store under the marker's rules.
func (f storeFixture) open(accept bool) (*pebblekv.DB, *storeMarker, string, error) {
	return openStoreIn(f.dir, f.marker, accept, slog.New(slog.DiscardHandler))
}

// run opens the store, commits n writes and closes it, as a daemon's life.
func (f storeFixture) run(t *testing.T, n int) {
	t.Helper()
	db, m, accepted, err := f.open(false)
	if err != nil || accepted != "" {
		t.Fatalf("open: %v, accepted %q", err, accepted)
	}
	for i := range n {
		if err := db.Update(func(tx *pebblekv.Tx) error { return tx.KVPut("n", strings.Repeat("k", i+1), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	m.close()
}

func TestStoreOpeningRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare leaves the state directory as the case needs it.
		prepare func(t *testing.T, f storeFixture)
		// refusal is what the refused start says; "" when it starts.
		refusal string
	}{
		{"a new state directory starts", func(*testing.T, storeFixture) {}, ""},
		{"a state directory that ran starts again", func(t *testing.T, f storeFixture) { f.run(t, 3) }, ""},
		{"a store from before the marker is recorded, not refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			if err := os.Remove(f.marker); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"a missing store is refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			if err := os.RemoveAll(f.dir); err != nil {
				t.Fatal(err)
			}
		}, "is missing or empty"},
		{"a store with fewer commits than recorded is refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			m, err := readMarker(f.marker)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.marker, []byte(markerText(m.id, m.commit+5, m.manifest)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the last 5 commits are missing; Pebble read every WAL to its end"},
		{"another store is refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			m, _ := readMarker(f.marker)
			if err := os.WriteFile(f.marker, []byte(markerText("0123", m.commit, m.manifest)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not store 0123"},
		{"a MANIFEST shorter than it was synced is refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			m, _ := readMarker(f.marker)
			mf := m.manifest
			mf.Size += 100
			if err := os.WriteFile(f.marker, []byte(markerText(m.id, m.commit, mf)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "was truncated at offset"},
		{"a marker open-conduit did not write is refused", func(t *testing.T, f storeFixture) {
			f.run(t, 3)
			if err := os.WriteFile(f.marker, []byte("hello\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not one open-conduit wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStoreFixture(t)
			tc.prepare(t, f)
			before, _ := os.ReadFile(f.marker)
			db, m, accepted, err := f.open(false)
			if tc.refusal == "" {
				if err != nil || accepted != "" {
					t.Fatalf("open: %v, accepted %q", err, accepted)
				}
				db.Close()
				m.close()
				return
			}
			if err == nil {
				db.Close()
				t.Fatal("the start was not refused")
			}
			for _, want := range []string{tc.refusal, "--accept-store-loss", "backup"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
			if after, _ := os.ReadFile(f.marker); string(after) != string(before) {
				t.Errorf("the refused start rewrote the marker:\n%s\n%s", before, after)
			}
			db, m, accepted, err = f.open(true)
			if err != nil || !strings.Contains(accepted, tc.refusal) {
				t.Fatalf("accepted: %v, accepted %q", err, accepted)
			}
			db.Close()
			m.close()
			// The flag was for one start: the marker follows the store now.
			db, m, accepted, err = f.open(false)
			if err != nil || accepted != "" {
				t.Fatalf("the next start: %v, accepted %q", err, accepted)
			}
			db.Close()
			m.close()
		})
	}
}

func TestStoreMarkerFollowsCommitsAndTheManifest(t *testing.T) {
	f := newStoreFixture(t)
	db, m, _, err := f.open(false)
	if err != nil {
		t.Fatal(err)
	}
	start := db.Manifest()
	for i := range 5 {
		if err := db.Update(func(tx *pebblekv.Tx) error { return tx.KVPut("n", strings.Repeat("k", i+1), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	// Read while the daemon runs, as a kill -9 would leave it.
	got, err := readMarker(f.marker)
	if err != nil || got.id != db.ID() || got.commit != 5 || got.manifest != start {
		t.Fatalf("marker %+v %v; store %s at commit %d, MANIFEST %+v", got, err, db.ID(), db.Commits(), start)
	}
	db.Close()
	m.close()
	// The next start flushes the WAL into a table and records it.
	db, m, _, err = f.open(false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	defer db.Close()
	got, _ = readMarker(f.marker)
	if got.manifest != db.Manifest() || !start.Less(got.manifest) {
		t.Errorf("marker's MANIFEST %+v, the store's %+v, at the first start %+v", got.manifest, db.Manifest(), start)
	}
}
