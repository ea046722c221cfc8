package pebblekv

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// benchBatchCommit commits one small Pebble batch per op: the floor under
// every kv.commit.
func benchBatchCommit(b *testing.B, opts *pebble.WriteOptions) {
	db := openDB(b, nil)
	key := make([]byte, 0, 16)
	for i := 0; b.Loop(); i++ {
		batch := db.pdb.NewBatch()
		key = appendSeq(append(key[:0], famKV), uint64(i))
		if err := batch.Set(key, []byte("value"), nil); err != nil {
			b.Fatal(err)
		}
		if err := batch.Commit(opts); err != nil {
			b.Fatal(err)
		}
		_ = batch.Close()
	}
}

// BenchmarkBatchCommitSync is one synced batch commit per op.
func BenchmarkBatchCommitSync(b *testing.B) { benchBatchCommit(b, pebble.Sync) }

// BenchmarkBatchCommitNoSync is one unsynced batch commit per op.
func BenchmarkBatchCommitNoSync(b *testing.B) { benchBatchCommit(b, pebble.NoSync) }

// BenchmarkCommitKV is one synced kv.commit per op: a version check and a
// put of the same key.
func BenchmarkCommitKV(b *testing.B) {
	db := openDB(b, nil)
	value := []byte("v0")
	update(b, db, func(tx *Tx) error { return tx.KVPut("notes", "counter", value) })
	for i := 0; b.Loop(); i++ {
		next := []byte(fmt.Sprint("v", i+1))
		res, err := db.CommitKV("notes", protocol.KVCommitParams{
			Checks: []protocol.KVCheck{{Namespace: "notes", Key: "counter", Version: digest.KVVersion(value)}},
			Puts:   []protocol.KVPut{{Namespace: "notes", Key: "counter", Value: next}},
		}, Limits{})
		if err != nil || len(res.Versions) != 1 {
			b.Fatal(err)
		}
		value = next
	}
}

// BenchmarkAccept accepts Events into a synced store, one or a hundred per
// Update, and reports Events per second.
func BenchmarkAccept(b *testing.B) {
	for _, per := range []int{1, 100} {
		b.Run(fmt.Sprintf("%d_per_update", per), func(b *testing.B) {
			db := openDB(b, nil)
			n := 0
			for b.Loop() {
				err := db.Update(func(tx *Tx) error {
					for range per {
						n++
						_, _, err := tx.Accept(benchEvent(n, 100), Limits{})
						if err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// benchEvent is Event n of a log spread over scopes scopes.
func benchEvent(n, scopes int) EventInput {
	return EventInput{
		Scope: fmt.Sprintf("scope-%02d", n%scopes), Source: "bench/src", Type: "bench.tick",
		DeliveryID: fmt.Sprint("d", n),
		Payload:    protocol.Payload{Schema: "bench.tick.v1", Data: []byte(fmt.Sprintf(`{"n":%d,"note":"a small payload"}`, n))},
		Time:       time.Unix(1_780_000_000+int64(n), 0),
	}
}

// buildLog fills a store with n Events over 100 scopes, unsynced and in
// batches of 10,000, and reopens it synced, as a daemon would find it.
func buildLog(b *testing.B, n int) *DB {
	dir := b.TempDir()
	db, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	const batch = 10_000
	for base := 0; base < n; base += batch {
		err := db.Update(func(tx *Tx) error {
			for i := base; i < min(base+batch, n); i++ {
				if _, _, err := tx.Accept(benchEvent(i, 100), Limits{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	built := time.Since(start)
	if err := db.pdb.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	b.Logf("built a log of %d events in %v (flushed and reopened after %v)", n, built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return db
}

// benchScopeEvents reads pages of one extension's scopes (1% of the log
// each) from a log of n Events.
func benchScopeEvents(b *testing.B, n int) {
	db := buildLog(b, n)
	for _, tc := range []struct {
		name   string
		scopes []string
		after  uint64
	}{
		{"one_scope_from_start", []string{"scope-42"}, 0},
		{"one_scope_from_middle", []string{"scope-42"}, uint64(n / 2)},
		{"three_scopes_from_middle", []string{"scope-07", "scope-42", "scope-99"}, uint64(n / 2)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			want := min(MaxEvents, len(tc.scopes)*(n-int(tc.after))/100)
			for b.Loop() {
				err := db.View(func(r *Reader) error {
					evs, err := r.ScopeEvents(tc.scopes, tc.after, MaxEvents)
					if err != nil {
						return err
					}
					if len(evs) != want {
						return fmt.Errorf("page of %d events, want %d", len(evs), want)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(want), "events/op")
		})
	}
}

// BenchmarkScopeEvents100k reads scope pages from a 100,000-Event log.
func BenchmarkScopeEvents100k(b *testing.B) { benchScopeEvents(b, 100_000) }

// BenchmarkScopeEvents1M reads scope pages from a 1,000,000-Event log.
func BenchmarkScopeEvents1M(b *testing.B) { benchScopeEvents(b, 1_000_000) }

// BenchmarkWorksPage reads a full page of Work (MaxWorks, newest first)
// from a store of 1,000 Work with three attempts each, alone and with
// each Work's latest execution (LatestExecutions), the page GET /v1/work
// answers.
func BenchmarkWorksPage(b *testing.B) {
	db := openDB(b, nil)
	update(b, db, func(tx *Tx) error {
		for i := range MaxWorks {
			w := Work{ID: fmt.Sprintf("w_%04d", i), Scope: "s1", Kind: "manual", State: WorkCompleted}
			if err := tx.PutWork(w); err != nil {
				return err
			}
			for a := 1; a <= 3; a++ {
				x := Execution{ID: fmt.Sprintf("x_%04d_%d", i, a), Work: w.ID, Scope: "s1", Attempt: a, Package: "runner",
					Executor: "runner.job", Epoch: 1, State: ExecSettled, Outcome: protocol.OutcomeFailed}
				if err := tx.PutExecution(x); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, latest := range []bool{false, true} {
		b.Run(fmt.Sprintf("latest_executions=%v", latest), func(b *testing.B) {
			for b.Loop() {
				view(b, db, func(r *Reader) error {
					ws, _, err := r.Works(WorkQuery{Newest: true})
					if err != nil || len(ws) != MaxWorks {
						b.Fatalf("a page of %d Work: %v", len(ws), err)
					}
					if !latest {
						return nil
					}
					ids := make([]string, len(ws))
					for i, w := range ws {
						ids[i] = w.ID
					}
					xs, err := r.LatestExecutions(ids)
					if err != nil || xs[0].Attempt != 3 {
						b.Fatalf("latest of %s: attempt %d: %v", ids[0], xs[0].Attempt, err)
					}
					return nil
				})
			}
		})
	}
}
