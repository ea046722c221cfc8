package notes_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// kvState is the package's KV: namespace → key → value.
type kvState map[string]map[string][]byte

func (s kvState) clone() kvState {
	out := kvState{}
	for ns, kv := range s {
		out[ns] = maps.Clone(kv)
	}
	return out
}

func (s kvState) put(ns, key string, value []byte) {
	if s[ns] == nil {
		s[ns] = map[string][]byte{}
	}
	s[ns][key] = value
}

// diff says how two states differ, or "" when they hold the same.
func (s kvState) diff(o kvState) string {
	var out []string
	for _, ns := range []string{notes.Store, notes.Meta} {
		for _, k := range slices.Sorted(maps.Keys(s[ns])) {
			if string(s[ns][k]) != string(o[ns][k]) {
				out = append(out, fmt.Sprintf("%s/%s: %q vs %q", ns, k, s[ns][k], o[ns][k]))
			}
		}
		for k := range o[ns] {
			if _, ok := s[ns][k]; !ok {
				out = append(out, fmt.Sprintf("%s/%s: only in the second", ns, k))
			}
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "\n")
}

// threadSizes are the seeded threads: big spans several migration batches.
var threadSizes = map[string]int{"big": 2*notes.MigrateBatch + 22, "small": 2, "json": 1}

// releaseOne is a store release 1 wrote: each thread's notes, and what
// each thread must read as.
func releaseOne() (kvState, map[string]string) {
	s, want := kvState{}, map[string]string{}
	for thread, size := range threadSizes {
		var ids, texts []string
		for i := range size {
			id := fmt.Sprintf("n-%s-%03d", thread, i)
			text := fmt.Sprintf("note %d of %s", i, thread)
			if thread == "json" {
				text = `{"thread":"big","text":"not a record"}`
			}
			s.put(notes.Store, "note/"+id, []byte(text))
			ids, texts = append(ids, id), append(texts, id+"="+text)
		}
		raw, _ := json.Marshal(ids)
		s.put(notes.Store, "order/"+thread, raw)
		want[thread] = strings.Join(texts, " ")
	}
	return s, want
}

// migrated starts release n over the store s recorded at layout stored,
// so it migrates at its first configure, and returns its KV and harness.
func migrated(t *testing.T, n, stored int, s kvState) (kvState, *sdktest.Harness) {
	t.Helper()
	opts := []sdktest.Option{sdktest.WithKVVersion(stored)}
	for ns, kv := range s {
		for k, v := range kv {
			opts = append(opts, sdktest.WithKV(ns, k, v))
		}
	}
	h := sdktest.New(t, notes.Release(n), opts...)
	return kvState{notes.Store: h.KV(notes.Store), notes.Meta: h.KV(notes.Meta)}, h
}

func TestMigrationCarriesReleaseOneNotesIntactToEachLaterLayout(t *testing.T) {
	for _, tc := range []struct {
		name            string
		release, stored int
		intact          bool
	}{
		{"1 to 2", 2, 1, true},
		{"1 to 3", 3, 1, true},
		{"release 3 over release 1's notes told there is nothing to migrate", 3, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed, want := releaseOne()
			got, h := migrated(t, tc.release, tc.stored, seed)
			for thread, all := range want {
				if got := texts(read(t, h, thread)); (got == all) != tc.intact {
					t.Fatalf("thread %s reads %.80q…, intact %v, want %v", thread, got, got == all, tc.intact)
				}
			}
			if !tc.intact {
				return
			}
			if layout := string(got[notes.Meta]["layout"]); layout != fmt.Sprint(tc.release) || len(got[notes.Meta]) != 1 {
				t.Fatalf("meta %v, want layout %d and no cursor left", got[notes.Meta], tc.release)
			}
			for k := range got[notes.Store] {
				if tc.release == 3 && strings.HasPrefix(k, "order/") {
					t.Fatalf("layout 3 kept the list %s", k)
				}
			}
			for i, c := range h.Commits() {
				if n := len(c.Puts) + len(c.Deletes); n > 2*notes.MigrateBatch+2 {
					t.Fatalf("commit %d writes %d keys: a migration batch must stay bounded", i, n)
				}
			}
		})
	}
}

func TestMigrationStepByStepEqualsOneRun(t *testing.T) {
	seed, _ := releaseOne()
	two, _ := migrated(t, 2, 1, seed)
	stepped, _ := migrated(t, 3, 2, two)
	direct, _ := migrated(t, 3, 1, seed)
	if d := stepped.diff(direct); d != "" {
		t.Fatalf("1→2 then 2→3 differs from 1→3:\n%s", d)
	}
}

func TestAnInterruptedMigrationRunAgainGivesTheSameNotes(t *testing.T) {
	seed, want := releaseOne()
	two, _ := migrated(t, 2, 1, seed)
	three, _ := migrated(t, 3, 2, two)
	firstBatch := slices.Sorted(maps.Keys(seed[notes.Store]))[:notes.MigrateBatch]
	if !strings.HasPrefix(firstBatch[len(firstBatch)-1], "note/") {
		t.Fatal("the first batch's keys are not all notes")
	}

	// 1→2 cut after its first commit: those notes converted, the cursor
	// after them.
	cut12 := seed.clone()
	for _, k := range firstBatch {
		cut12.put(notes.Store, k, two[notes.Store][k])
	}
	noCursor := cut12.clone()
	cut12.put(notes.Meta, "migration", []byte(`{"to":2,"after":"`+firstBatch[len(firstBatch)-1]+`"}`))

	// 2→3 cut inside thread big: its first batch moved and indexed, its
	// list still there.
	cut23 := two.clone()
	for i := 1; i <= notes.MigrateBatch; i++ {
		id, key := fmt.Sprintf("n-big-%03d", i-1), fmt.Sprintf("thread/big/%08d", i)
		cut23.put(notes.Store, "note/"+id, three[notes.Store]["note/"+id])
		cut23.put(notes.Store, key, three[notes.Store][key])
	}

	for _, tc := range []struct {
		name            string
		release, stored int
		from, want      kvState
		same            bool
	}{
		{"1→2 cut after a batch", 2, 1, cut12, two, true},
		{"1→2 cut after a batch, its cursor lost", 2, 1, noCursor, two, false},
		{"2→3 cut inside a thread", 3, 2, cut23, three, true},
		{"1→3 run again over a finished migration", 3, 1, three, three, true},
		{"1→2 run again over a finished migration", 2, 1, two, two, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, h := migrated(t, tc.release, tc.stored, tc.from)
			if d := got.diff(tc.want); (d == "") != tc.same {
				t.Fatalf("same as one clean run: %v, want %v\n%s", d == "", tc.same, d)
			}
			if tc.same && texts(read(t, h, "big")) != want["big"] {
				t.Fatal("thread big does not read back intact")
			}
		})
	}
}
