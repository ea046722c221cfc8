package pebblekv

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// seedNotes writes notes/keep and notes/old, the state each batch test
// starts from.
func seedNotes(t *testing.T, db *DB) {
	t.Helper()
	update(t, db, func(tx *Tx) error {
		if err := tx.KVPut("notes", "keep", []byte("v1")); err != nil {
			return err
		}
		return tx.KVPut("notes", "old", []byte("stale"))
	})
}

// goodBatch is a batch notes may commit: a check that holds, a put, a
// delete and an emission.
func goodBatch() protocol.KVCommitParams {
	return protocol.KVCommitParams{
		Checks:    []protocol.KVCheck{{Namespace: "notes", Key: "keep", Version: digest.KVVersion([]byte("v1"))}},
		Puts:      []protocol.KVPut{{Namespace: "notes.index", Key: "new", Value: []byte("n")}},
		Deletes:   []protocol.KVDelete{{Namespace: "notes", Key: "old"}},
		Emissions: []protocol.Emission{{Scope: "s1", Source: "notes/web", DeliveryID: "d1", Type: "notes.changed"}},
	}
}

// assertUntouched checks that nothing of goodBatch applied.
func assertUntouched(t *testing.T, db *DB) {
	t.Helper()
	if v := kvGet(t, db, "notes.index", "new"); v != nil {
		t.Errorf("notes.index/new = %q after a refused batch", v)
	}
	if v := kvGet(t, db, "notes", "old"); string(v) != "stale" {
		t.Errorf("notes/old = %q after a refused batch, want stale", v)
	}
	if seq := latest(t, db); seq != 0 {
		t.Errorf("latest sequence %d after a refused batch, want 0", seq)
	}
}

// assertApplied checks that all of goodBatch applied.
func assertApplied(t *testing.T, db *DB, res protocol.KVCommitResult) {
	t.Helper()
	if v := kvGet(t, db, "notes.index", "new"); string(v) != "n" {
		t.Errorf("notes.index/new = %q, want n", v)
	}
	if v := kvGet(t, db, "notes", "old"); v != nil {
		t.Errorf("notes/old = %q, want deleted", v)
	}
	want := protocol.KVCommitResult{
		Versions:  []string{digest.KVVersion([]byte("n"))},
		Emissions: []protocol.EmissionResult{{EventID: digest.EmittedEventID("notes/web", "d1"), Added: true}},
	}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
}

func TestKVCommitForeignNamespaceAppliesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(p *protocol.KVCommitParams)
	}{
		{"foreign check", func(p *protocol.KVCommitParams) {
			p.Checks = append(p.Checks, protocol.KVCheck{Namespace: "other", Key: "k", Absent: true})
		}},
		{"foreign put", func(p *protocol.KVCommitParams) {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: "other", Key: "k", Value: []byte("x")})
		}},
		{"foreign delete", func(p *protocol.KVCommitParams) {
			p.Deletes = append(p.Deletes, protocol.KVDelete{Namespace: "other.x", Key: "k"})
		}},
		{"lookalike prefix", func(p *protocol.KVCommitParams) {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: "notesx", Key: "k", Value: []byte("x")})
		}},
		{"empty suffix", func(p *protocol.KVCommitParams) {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: "notes.", Key: "k", Value: []byte("x")})
		}},
		{"reserved name", func(p *protocol.KVCommitParams) {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: "core.extensions", Key: "notes", Value: []byte("9")})
		}},
		{"foreign emission source", func(p *protocol.KVCommitParams) {
			p.Emissions = append(p.Emissions, protocol.Emission{Scope: "s1", Source: "other", DeliveryID: "d2", Type: "notes.changed"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			seedNotes(t, db)
			p := goodBatch()
			tc.bad(&p)
			_, err := db.CommitKV("notes", p, Limits{})
			wantCode(t, err, protocol.ErrUnauthorized)
			assertUntouched(t, db)

			// Negative control: the same batch without the bad part applies.
			res, err := db.CommitKV("notes", goodBatch(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			assertApplied(t, db, res)
		})
	}
}

func TestKVCommitFailedCheckAppliesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check protocol.KVCheck
	}{
		{"version changed", protocol.KVCheck{Namespace: "notes", Key: "keep", Version: digest.KVVersion([]byte("v0"))}},
		{"required absent but present", protocol.KVCheck{Namespace: "notes", Key: "keep", Absent: true}},
		{"required version but absent", protocol.KVCheck{Namespace: "notes", Key: "gone", Version: digest.KVVersion([]byte("v1"))}},
		{"empty version is never a match", protocol.KVCheck{Namespace: "notes", Key: "gone"}},
		{"check on a key the batch deletes", protocol.KVCheck{Namespace: "notes", Key: "old", Absent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			seedNotes(t, db)
			p := goodBatch()
			p.Checks = append(p.Checks, tc.check)
			_, err := db.CommitKV("notes", p, Limits{})
			wantCode(t, err, protocol.ErrConflict)
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.check.Key)) {
				t.Errorf("conflict %q does not name key %q", err, tc.check.Key)
			}
			assertUntouched(t, db)

			res, err := db.CommitKV("notes", goodBatch(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			assertApplied(t, db, res)
		})
	}
}

func TestKVCommitVersionsAndAbsence(t *testing.T) {
	db := openDB(t, nil)
	res, err := db.CommitKV("notes", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "notes", Key: "a", Absent: true}},
		Puts: []protocol.KVPut{
			{Namespace: "notes", Key: "a", Value: []byte("one")},
			{Namespace: "notes", Key: "b", Value: []byte{}},
		},
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{digest.KVVersion([]byte("one")), digest.KVVersion(nil)}
	if !slices.Equal(res.Versions, want) || res.Emissions != nil {
		t.Fatalf("result %+v, want versions %v and no emissions", res, want)
	}
	view(t, db, func(r *Reader) error {
		v, version, found, err := r.KVGet("notes", "a")
		if err != nil || !found || string(v) != "one" || version != want[0] {
			t.Errorf("KVGet a = %q %s %v %v", v, version, found, err)
		}
		v, version, found, err = r.KVGet("notes", "b")
		if err != nil || !found || len(v) != 0 || version != want[1] {
			t.Errorf("KVGet b (empty value) = %q %s %v %v", v, version, found, err)
		}
		_, version, found, err = r.KVGet("notes", "missing")
		if err != nil || found || version != "" {
			t.Errorf("KVGet missing = %s %v %v, want absent with no version", version, found, err)
		}
		return nil
	})

	// The version returned is the one a later check names.
	_, err = db.CommitKV("notes", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "notes", Key: "a", Version: res.Versions[0]}},
		Puts:   []protocol.KVPut{{Namespace: "notes", Key: "a", Value: []byte("two")}},
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The old version no longer holds; a delete makes the key absent.
	_, err = db.CommitKV("notes", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "notes", Key: "a", Version: res.Versions[0]}},
	}, Limits{})
	wantCode(t, err, protocol.ErrConflict)
	_, err = db.CommitKV("notes", protocol.KVCommitParams{
		Checks:  []protocol.KVCheck{{Namespace: "notes", Key: "a", Version: digest.KVVersion([]byte("two"))}},
		Deletes: []protocol.KVDelete{{Namespace: "notes", Key: "a"}, {Namespace: "notes", Key: "never"}},
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CommitKV("notes", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "notes", Key: "a", Absent: true}},
	}, Limits{}); err != nil {
		t.Fatalf("absence check after delete: %v", err)
	}
}

func TestKVCommitRefusesBadExtensionName(t *testing.T) {
	db := openDB(t, nil)
	for _, ext := range []string{"", "Notes", ".notes"} {
		_, err := db.CommitKV(ext, protocol.KVCommitParams{
			Puts: []protocol.KVPut{{Namespace: ext + ".x", Key: "k", Value: []byte("v")}},
		}, Limits{})
		wantCode(t, err, protocol.ErrInvalid)
	}
}

func TestKVList(t *testing.T) {
	db := openDB(t, nil)
	keys := []string{"", "a", "a/1", "a/2", "a/3", "ab", "a\xff", "b", "b/1", "\xff\xff"} // sorted
	update(t, db, func(tx *Tx) error {
		for _, k := range keys {
			if err := tx.KVPut("notes", k, []byte("v:"+k)); err != nil {
				return err
			}
		}
		// Neighbouring namespaces never show up.
		if err := tx.KVPut("notes.index", "a/1", []byte("x")); err != nil {
			return err
		}
		return tx.KVPut("note", "a", []byte("x"))
	})
	reference := func(prefix, after string, limit int) ([]string, bool) {
		var out []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) && k > after {
				out = append(out, k)
			}
		}
		if len(out) > limit {
			return out[:limit], true
		}
		return out, false
	}
	for _, tc := range []struct {
		prefix, after string
		limit         int
	}{
		{"", "", 0},
		{"", "", 3},
		{"a", "", 0},
		{"a/", "", 2},
		{"a/", "a/1", 0},
		{"a/", "a/3", 0},
		{"a", "a/2", 2},
		{"a", "0", 0},    // after before the prefix
		{"a", "zz", 0},   // after past the prefix
		{"b", "a/1", 1},  // after before the prefix, limit
		{"\xff", "", 0},  // prefix of 0xff bytes
		{"", "a\xff", 0}, // after ending in 0xff
		{"c", "", 0},     // nothing there
	} {
		t.Run(fmt.Sprintf("%q after %q limit %d", tc.prefix, tc.after, tc.limit), func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = protocol.KVMaxList
			}
			want, wantMore := reference(tc.prefix, tc.after, limit)
			view(t, db, func(r *Reader) error {
				items, more, err := r.KVList("notes", tc.prefix, tc.after, tc.limit)
				if err != nil {
					return err
				}
				got := []string{}
				for _, it := range items {
					got = append(got, it.Key)
					if string(it.Value) != "v:"+it.Key || it.Version != digest.KVVersion(it.Value) {
						t.Errorf("item %q = %q version %s", it.Key, it.Value, it.Version)
					}
				}
				if !slices.Equal(got, append([]string{}, want...)) || more != wantMore {
					t.Errorf("got %q more=%v, want %q more=%v", got, more, want, wantMore)
				}
				return nil
			})
		})
	}

	t.Run("paging by one collects every key once", func(t *testing.T) {
		var got []string
		after := ""
		for {
			var items []protocol.KVItem
			var more bool
			view(t, db, func(r *Reader) error {
				var err error
				items, more, err = r.KVList("notes", "", after, 1)
				return err
			})
			for _, it := range items {
				got = append(got, it.Key)
				after = it.Key
			}
			if !more {
				break
			}
		}
		// The empty key is never listed (it could not be a cursor).
		if !slices.Equal(got, keys[1:]) {
			t.Errorf("paged %q, want %q", got, keys[1:])
		}
	})
}

func TestKVListCapsTheLimit(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		for i := range protocol.KVMaxList + 5 {
			if err := tx.KVPut("notes", fmt.Sprintf("k%05d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	for _, limit := range []int{-1, 0, protocol.KVMaxList + 1, 1 << 30} {
		view(t, db, func(r *Reader) error {
			items, more, err := r.KVList("notes", "", "", limit)
			if err != nil {
				return err
			}
			if len(items) != protocol.KVMaxList || !more {
				t.Errorf("limit %d: %d items more=%v, want %d and more", limit, len(items), more, protocol.KVMaxList)
			}
			return nil
		})
	}
}

// TestKVKeysWithOddBytesStayInTheirNamespace writes pairs whose namespace and
// key would run together under a naive separator encoding.
func TestKVKeysWithOddBytesStayInTheirNamespace(t *testing.T) {
	type entry struct{ ns, key string }
	entries := []entry{
		{"a", "b\x00c"},
		{"a\x00b", "c"},
		{"a", "\x01b"},
		{"a", ".b"},
		{"a.b", ""},
		{"a.b", "c/d"},
		{"a", "b/c"},
		{"a/b", "c"},
		{"ab", ""},
		{"a", "b"},
		{"a", "ключ/键/🔑"},
		{"a", ""},
		{"a", "\xff"},
		{"a\xff", ""},
		{"core.extensions", "a"},
	}
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		for i, e := range entries {
			if err := tx.KVPut(e.ns, e.key, []byte{byte(i)}); err != nil {
				return err
			}
		}
		return tx.SetKVLayoutVersion("a", 7)
	})
	byNS := map[string][]string{}
	for _, e := range entries {
		if e.key != "" { // the empty key is read, never listed
			byNS[e.ns] = append(byNS[e.ns], e.key)
		}
	}
	view(t, db, func(r *Reader) error {
		for i, e := range entries {
			v, _, found, err := r.KVGet(e.ns, e.key)
			if err != nil || !found || !bytes.Equal(v, []byte{byte(i)}) {
				t.Errorf("%q/%q = %v %v %v, want [%d]", e.ns, e.key, v, found, err, i)
			}
		}
		for ns, want := range byNS {
			items, _, err := r.KVList(ns, "", "", 0)
			if err != nil {
				return err
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Key)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("namespace %q lists %q, want %q", ns, got, want)
			}
		}
		return nil
	})
}

func TestKVLayoutVersionIsUnreachableFromKV(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		if err := tx.SetKVLayoutVersion("core", 3); err != nil {
			return err
		}
		return tx.SetKVLayoutVersion("notes", 2)
	})
	// Every namespace that looks like the reserved one, or like its bytes,
	// reads empty: the layout versions are under another family.
	lookalikes := []string{"core", "core.extensions", "core.extensions.notes", "notes", "m", "mkvlayout", "kvlayout", "\x00", "core\x00extensions"}
	view(t, db, func(r *Reader) error {
		for _, ns := range lookalikes {
			items, _, err := r.KVList(ns, "", "", 0)
			if err != nil {
				return err
			}
			if len(items) != 0 {
				t.Errorf("namespace %q lists %d items, want none", ns, len(items))
			}
			for _, key := range []string{"notes", "core", "kvlayout\x00notes", ""} {
				if _, _, found, err := r.KVGet(ns, key); err != nil || found {
					t.Errorf("%q/%q found=%v err=%v, want absent", ns, key, found, err)
				}
			}
		}
		return nil
	})
	// Extension core may write core.extensions: its own KV, not the records.
	res, err := db.CommitKV("core", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: "core.extensions", Key: "notes", Absent: true}},
		Puts:   []protocol.KVPut{{Namespace: "core.extensions", Key: "notes", Value: []byte("0")}},
	}, Limits{})
	if err != nil || len(res.Versions) != 1 {
		t.Fatalf("core's own namespace: %+v %v", res, err)
	}
	// And notes can't address core.extensions at all.
	_, err = db.CommitKV("notes", protocol.KVCommitParams{
		Puts: []protocol.KVPut{{Namespace: "core.extensions", Key: "notes", Value: []byte("9")}},
	}, Limits{})
	wantCode(t, err, protocol.ErrUnauthorized)
	view(t, db, func(r *Reader) error {
		for ext, want := range map[string]int{"core": 3, "notes": 2} {
			v, recorded, err := r.KVLayoutVersion(ext)
			if err != nil || !recorded || v != want {
				t.Errorf("layout of %s = %d %v %v, want %d", ext, v, recorded, err, want)
			}
		}
		if _, recorded, err := r.KVLayoutVersion("other"); err != nil || recorded {
			t.Errorf("layout of other recorded=%v err=%v, want none", recorded, err)
		}
		return nil
	})
}

func TestSetKVLayoutVersion(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error { return tx.SetKVLayoutVersion("notes", 2) })
	for _, tc := range []struct {
		name string
		ext  string
		v    int
		want *protocol.Error
	}{
		{"same version", "notes", 2, nil},
		{"newer version", "notes", 3, nil},
		{"downgrade", "notes", 1, protocol.ErrKVDowngrade},
		{"negative", "notes", -1, protocol.ErrInvalid},
		{"not an identifier", "Notes", 1, protocol.ErrInvalid},
		{"empty name", "", 1, protocol.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := db.Update(func(tx *Tx) error { return tx.SetKVLayoutVersion(tc.ext, tc.v) })
			if tc.want == nil && err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				wantCode(t, err, tc.want)
			}
		})
	}
	view(t, db, func(r *Reader) error {
		if v, _, err := r.KVLayoutVersion("notes"); err != nil || v != 3 {
			t.Errorf("layout = %d %v, want 3", v, err)
		}
		return nil
	})
}
