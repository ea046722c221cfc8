package pebblekv

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// t0 is the time the records of these tests begin at.
var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// running is attempt of work, running under epoch 1 with the token hash of
// token.
func running(id, work string, attempt int, token string) Execution {
	return Execution{ID: id, Work: work, Scope: "s1", Attempt: attempt, Package: "runner", Executor: "runner.job",
		Epoch: 1, TokenHash: TokenHash(token), State: ExecRunning, Started: t0.Add(time.Duration(attempt) * time.Minute)}
}

// settled is x settled with outcome, its token hash still set so the test
// sees the store drop it.
func settled(x Execution, outcome string) Execution {
	x.State, x.Outcome, x.Settled = ExecSettled, outcome, x.Started.Add(time.Second)
	return x
}

// recovered is x after a recovery: the next epoch and a new token.
func recovered(x Execution, token string) Execution {
	x.Epoch++
	x.TokenHash = TokenHash(token)
	return x
}

// putExecutions writes xs in one Update.
func putExecutions(t *testing.T, db *DB, xs ...Execution) {
	t.Helper()
	update(t, db, func(tx *Tx) error {
		for _, x := range xs {
			if err := tx.PutExecution(x); err != nil {
				return err
			}
		}
		return nil
	})
}

// dump is every key and value outside the meta family, so a test can see a
// refusal wrote nothing (the meta family counts commits).
func dump(t *testing.T, db *DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	view(t, db, func(r *Reader) error {
		return r.scan([]byte{0}, []byte{0xff}, func(k, v []byte) (bool, error) {
			if k[0] != famMeta {
				out[string(k)] = string(v)
			}
			return true, nil
		})
	})
	return out
}

// byToken is the ID of the running execution holding token's hash, "" for
// none.
func byToken(t *testing.T, db *DB, token string) string {
	t.Helper()
	var id string
	view(t, db, func(r *Reader) error {
		x, found, err := r.ExecutionByTokenHash(TokenHash(token))
		if found {
			id = x.ID
		}
		return err
	})
	return id
}

func runningIDs(t *testing.T, db *DB) []string {
	t.Helper()
	ids := []string{}
	view(t, db, func(r *Reader) error {
		xs, err := r.RunningExecutions()
		for _, x := range xs {
			ids = append(ids, x.ID)
		}
		return err
	})
	return ids
}

func TestPutExecutionRewritesItsIndexesExactly(t *testing.T) {
	a := running("x_a", "w1", 1, "tok-a")
	b := running("x_b", "w2", 1, "tok-b")
	for _, tc := range []struct {
		name        string
		puts        []Execution
		wantRunning []string
		// tokens maps a token to the execution its hash finds ("" none).
		tokens map[string]string
		// wantByWork is the 'x' index as work|attempt-and-ID.
		wantByWork int
	}{
		{"a running execution is found by its token's hash",
			[]Execution{a, b}, []string{"x_a", "x_b"},
			map[string]string{"tok-a": "x_a", "tok-b": "x_b", "tok-unknown": ""}, 2},
		{"a settled execution leaves the running index and its old hash finds nothing",
			[]Execution{a, b, settled(a, protocol.OutcomeCompleted)}, []string{"x_b"},
			map[string]string{"tok-a": "", "tok-b": "x_b"}, 2},
		{"a recovery's new token makes the old one find nothing",
			[]Execution{a, recovered(a, "tok-a2")}, []string{"x_a"},
			map[string]string{"tok-a": "", "tok-a2": "x_a"}, 1},
		{"a recovered execution settled leaves neither token",
			[]Execution{a, recovered(a, "tok-a2"), settled(recovered(a, "tok-a2"), protocol.OutcomeFailed)}, []string{},
			map[string]string{"tok-a": "", "tok-a2": ""}, 1},
		{"rewriting a running execution with its own token keeps one entry",
			[]Execution{a, a, a}, []string{"x_a"},
			map[string]string{"tok-a": "x_a"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			for _, x := range tc.puts {
				putExecutions(t, db, x)
			}
			if got := runningIDs(t, db); !slices.Equal(got, tc.wantRunning) {
				t.Errorf("RunningExecutions = %v, want %v", got, tc.wantRunning)
			}
			for tok, want := range tc.tokens {
				if got := byToken(t, db, tok); got != want {
					t.Errorf("ExecutionByTokenHash(%s) = %q, want %q", tok, got, want)
				}
			}
			// The index holds one entry per running execution, no more.
			if got := len(rawKeys(t, db, famExecRunning)); got != len(tc.wantRunning) {
				t.Errorf("running index has %d entries, want %d", got, len(tc.wantRunning))
			}
			if got := len(rawKeys(t, db, famExecByWork)); got != tc.wantByWork {
				t.Errorf("by-Work index has %d entries, want %d", got, tc.wantByWork)
			}
		})
	}
}

func TestPutExecutionSettledDropsTheTokenHash(t *testing.T) {
	db := openDB(t, nil)
	a := running("x_a", "w1", 1, "tok-a")
	putExecutions(t, db, a, settled(a, protocol.OutcomeCompleted))
	view(t, db, func(r *Reader) error {
		x, found, err := r.Execution("x_a")
		if !found || x.State != ExecSettled || x.TokenHash != "" || x.Outcome != protocol.OutcomeCompleted {
			t.Errorf("settled execution reads %+v (found %v), want settled, completed, no token hash", x, found)
		}
		return err
	})
	if s := dump(t, db); slices.ContainsFunc(slices.Collect(maps.Values(s)), func(v string) bool {
		return strings.Contains(v, TokenHash("tok-a"))
	}) {
		t.Error("the store still holds the settled execution's token hash")
	}
}

func TestExecutionsOfListsByAttempt(t *testing.T) {
	db := openDB(t, nil)
	// Written out of order; attempt 10 sorts after 2 only if attempts are
	// numbers, and w1x's share w1's bytes as a prefix.
	putExecutions(t, db,
		running("x_3", "w1", 3, "t3"), running("x_10", "w1", 10, "t10"), running("x_1", "w1", 1, "t1"),
		running("x_2", "w1", 2, "t2"), running("x_other", "w1x", 1, "to"), running("x_w", "w", 1, "tw"))
	for _, tc := range []struct {
		work string
		want []string
	}{
		{"w1", []string{"x_1", "x_2", "x_3", "x_10"}},
		{"w1x", []string{"x_other"}},
		{"w", []string{"x_w"}},
		{"w-unknown", []string{}},
		{"", []string{}},
	} {
		t.Run(tc.work, func(t *testing.T) {
			got := []string{}
			view(t, db, func(r *Reader) error {
				xs, err := r.ExecutionsOf(tc.work)
				for _, x := range xs {
					got = append(got, x.ID)
				}
				return err
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("ExecutionsOf(%q) = %v, want %v", tc.work, got, tc.want)
			}
		})
	}
}

func TestLatestExecutionsIsEachWorksHighestAttempt(t *testing.T) {
	db := openDB(t, nil)
	putExecutions(t, db,
		running("x_3", "w1", 3, "t3"), settled(running("x_10", "w1", 10, "t10"), protocol.OutcomeFailed), running("x_1", "w1", 1, "t1"),
		running("x_other", "w1x", 1, "to"), running("x_w", "w", 1, "tw"))
	latestOf := func(r *Reader, works ...string) []string {
		t.Helper()
		xs, err := r.LatestExecutions(works)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range xs {
			got = append(got, fmt.Sprintf("%s#%d %s/%s", x.ID, x.Attempt, x.Package, x.Executor))
		}
		return got
	}
	view(t, db, func(r *Reader) error {
		// A Work without executions, "" and a repeat keep their places;
		// w1x shares w1's bytes as a prefix and is not w1's.
		got := latestOf(r, "w1", "w-unknown", "w1x", "", "w", "w1")
		want := []string{"x_10#10 runner/runner.job", "#0 /", "x_other#1 runner/runner.job", "#0 /", "x_w#1 runner/runner.job", "x_10#10 runner/runner.job"}
		if !slices.Equal(got, want) {
			t.Errorf("LatestExecutions = %q, want %q", got, want)
		}
		if got := latestOf(r); len(got) != 0 {
			t.Errorf("LatestExecutions of no Work = %q", got)
		}
		return nil
	})
	update(t, db, func(tx *Tx) error {
		// An Update sees the attempt it writes.
		if err := tx.PutExecution(running("x_11", "w1", 11, "t11")); err != nil {
			return err
		}
		if got := latestOf(tx.Reader, "w1"); !slices.Equal(got, []string{"x_11#11 runner/runner.job"}) {
			t.Errorf("LatestExecutions in the Update that wrote attempt 11 = %q", got)
		}
		return nil
	})
}

func TestRunningExecutionsOldestStartFirst(t *testing.T) {
	db := openDB(t, nil)
	late, early, tie := running("x_late", "w1", 1, "t1"), running("x_early", "w2", 1, "t2"), running("x_a_tie", "w3", 1, "t3")
	late.Started, early.Started, tie.Started = t0.Add(time.Hour), t0, t0
	putExecutions(t, db, late, early, tie)
	if got, want := runningIDs(t, db), []string{"x_a_tie", "x_early", "x_late"}; !slices.Equal(got, want) {
		t.Errorf("RunningExecutions = %v, want %v", got, want)
	}
}

func TestPutExecutionRefusesInvalidRecordsAndWritesNothing(t *testing.T) {
	base := running("x_a", "w1", 1, "tok-a")
	other := running("x_b", "w2", 1, "tok-b")
	with := func(f func(*Execution)) Execution { x := base; f(&x); return x }
	// big is one byte over the bound.
	big := jsontext.Value(`"` + strings.Repeat("r", protocol.MaxRecoveryBytes-1) + `"`)
	for _, tc := range []struct {
		name string
		x    Execution
		want *protocol.Error
	}{
		{"missing ID", with(func(x *Execution) { x.ID = "" }), protocol.ErrInvalid},
		{"missing Work", with(func(x *Execution) { x.Work = "" }), protocol.ErrInvalid},
		{"missing scope", with(func(x *Execution) { x.Scope = "" }), protocol.ErrInvalid},
		{"missing package", with(func(x *Execution) { x.Package = "" }), protocol.ErrInvalid},
		{"missing executor", with(func(x *Execution) { x.Executor = "" }), protocol.ErrInvalid},
		{"attempt 0", with(func(x *Execution) { x.Attempt = 0 }), protocol.ErrInvalid},
		{"epoch 0", with(func(x *Execution) { x.Epoch = 0 }), protocol.ErrInvalid},
		{"running without a token hash", with(func(x *Execution) { x.TokenHash = "" }), protocol.ErrInvalid},
		{"running with the token itself", with(func(x *Execution) { x.TokenHash = "tok-a" }), protocol.ErrInvalid},
		{"running with an upper-case hash", with(func(x *Execution) { x.TokenHash = strings.ToUpper(x.TokenHash) }), protocol.ErrInvalid},
		{"settled without an outcome", with(func(x *Execution) { x.State = ExecSettled }), protocol.ErrInvalid},
		{"unknown state", with(func(x *Execution) { x.State = "paused" }), protocol.ErrInvalid},
		{"unknown declared outcome", with(func(x *Execution) { x.Declared = "maybe" }), protocol.ErrInvalid},
		{"recovery over MaxRecoveryBytes", with(func(x *Execution) { x.Recovery = big }), protocol.ErrTooLarge},
		{"recovery that is not JSON", with(func(x *Execution) { x.Recovery = jsontext.Value(`{"pid":`) }), protocol.ErrInvalid},
		// Rewrites of the stored x_a.
		{"moving to another Work", with(func(x *Execution) { x.Work = "w9" }), protocol.ErrInvalid},
		{"another attempt", with(func(x *Execution) { x.Attempt = 2 }), protocol.ErrInvalid},
		{"another executor", with(func(x *Execution) { x.Executor = "runner.other" }), protocol.ErrInvalid},
		{"another running execution's token hash", with(func(x *Execution) { x.TokenHash = TokenHash("tok-b") }), protocol.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			putExecutions(t, db, base, other)
			before := dump(t, db)
			var refusal error
			update(t, db, func(tx *Tx) error { refusal = tx.PutExecution(tc.x); return nil })
			wantCode(t, refusal, tc.want)
			if after := dump(t, db); !maps.Equal(before, after) {
				t.Errorf("a refused PutExecution changed the store: %d keys before, %d after", len(before), len(after))
			}
		})
	}
}

func TestPutExecutionLeaseAndSettlementOnlyMoveForward(t *testing.T) {
	a := running("x_a", "w1", 1, "tok-a")
	a3 := a
	a3.Epoch = 3
	for _, tc := range []struct {
		name   string
		stored []Execution
		put    Execution
		want   *protocol.Error // nil: accepted
	}{
		{"an older epoch is a conflict", []Execution{a3}, recovered(a, "tok-new"), protocol.ErrConflict},
		{"the same epoch is accepted", []Execution{a3}, a3, nil},
		{"a later epoch is accepted", []Execution{a}, recovered(a, "tok-new"), nil},
		{"running again once settled is a conflict", []Execution{a, settled(a, protocol.OutcomeFailed)}, recovered(a, "tok-new"), protocol.ErrConflict},
		{"settling again is accepted", []Execution{a, settled(a, protocol.OutcomeFailed)}, settled(a, protocol.OutcomeFailed), nil},
		{"a settled execution's freed token hash may be taken", []Execution{a, settled(a, protocol.OutcomeCompleted)}, running("x_b", "w2", 1, "tok-a"), nil},
		{"recovery metadata of exactly MaxRecoveryBytes is accepted", []Execution{a},
			func() Execution {
				x := a
				x.Recovery = jsontext.Value(`"` + strings.Repeat("r", protocol.MaxRecoveryBytes-2) + `"`)
				return x
			}(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			for _, x := range tc.stored {
				putExecutions(t, db, x)
			}
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutExecution(tc.put); return nil })
			if tc.want == nil {
				if err != nil {
					t.Fatalf("PutExecution: %v, want accepted", err)
				}
				return
			}
			wantCode(t, err, tc.want)
			if !maps.Equal(before, dump(t, db)) {
				t.Error("a refused PutExecution changed the store")
			}
		})
	}
}

func TestExecutionByTokenHashIgnoresWhatIsNotAHash(t *testing.T) {
	db := openDB(t, nil)
	putExecutions(t, db, running("x_a", "w1", 1, "tok-a"))
	for _, tc := range []struct {
		name, hash string
		found      bool
	}{
		{"the token's hash", TokenHash("tok-a"), true},
		{"the token itself", "tok-a", false},
		{"the hash in upper case", strings.ToUpper(TokenHash("tok-a")), false},
		{"another token's hash", TokenHash("tok-b"), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view(t, db, func(r *Reader) error {
				_, found, err := r.ExecutionByTokenHash(tc.hash)
				if found != tc.found {
					t.Errorf("found %v, want %v", found, tc.found)
				}
				return err
			})
		})
	}
}

func TestExecutionRoundTripsItsRecord(t *testing.T) {
	db := openDB(t, nil)
	code := 3
	x := running("x_a", "w1", 2, "tok-a")
	x.Recovery = jsontext.Value(`{"pid":42,"start":"1234"}`)
	x.Declared, x.DeclaredReason, x.Wait, x.Binding = protocol.OutcomeFailed, "disk full", "wt_1", "nightly"
	putExecutions(t, db, x)
	s := settled(x, protocol.OutcomeFailed)
	s.ExitCode, s.Reason = &code, "exit 3"
	putExecutions(t, db, s)
	view(t, db, func(r *Reader) error {
		got, found, err := r.Execution("x_a")
		if err != nil || !found {
			return errors.Join(err, errors.New("x_a not found"))
		}
		if got.ExitCode == nil || *got.ExitCode != 3 || string(got.Recovery) != string(x.Recovery) ||
			got.Declared != protocol.OutcomeFailed || got.Wait != "wt_1" || got.Binding != "nightly" || !got.Settled.Equal(s.Settled) {
			t.Errorf("Execution reads %+v", got)
		}
		if _, found, _ := r.Execution("x_unknown"); found {
			t.Error("an unknown execution was found")
		}
		return nil
	})
}
