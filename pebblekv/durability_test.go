package pebblekv

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// kill9Env names the store directory of a TestDurabilityAfterKill9 child;
// kill9Env+"_ITER" its iteration.
const kill9Env = "PEBBLEKV_KILL9_DIR"

// durKey names write n of iteration it, as a KV key and a delivery ID.
func durKey(it, n int) string { return fmt.Sprintf("%03d/%06d", it, n) }

// TestDurabilityAfterKill9 runs this test binary as a child that commits
// numbered KV writes and Events, printing "acked N" only after both returned;
// the parent SIGKILLs it after a random number of acks and checks that every
// acked write and Event survived, again and again on the same store.
func TestDurabilityAfterKill9(t *testing.T) {
	if dir := os.Getenv(kill9Env); dir != "" {
		kill9Child(dir, os.Getenv(kill9Env+"_ITER"))
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("this test needs SIGKILL, which Windows lacks")
	}
	iterations := 100
	if raceEnabled {
		iterations = 50 // each race-instrumented child takes ~0.7 s to start and open
	}
	if testing.Short() {
		iterations = 10
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	acked := make([]int, iterations) // writes acknowledged per iteration
	losses, events := 0, 0
	start := time.Now()
	for it := range iterations {
		want := 1 + rng.IntN(20)
		acked[it] = runUntilAcked(t, exe, dir, it, want)
		events += acked[it]

		db, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("iteration %d: reopen after kill: %v", it, err)
		}
		view(t, db, func(r *Reader) error {
			for i := 0; i <= it; i++ {
				for n := range acked[i] {
					v, _, found, err := r.KVGet("dur", durKey(i, n))
					if err != nil {
						return err
					}
					if !found || string(v) != "v"+durKey(i, n) {
						losses++
						t.Errorf("iteration %d: acked KV write %s lost", it, durKey(i, n))
					}
					if _, found, err := r.EventByDelivery("dur", durKey(i, n)); err != nil {
						return err
					} else if !found {
						losses++
						t.Errorf("iteration %d: acked event %s lost", it, durKey(i, n))
					}
				}
			}
			// The log has no gaps: sequences run 1..latest.
			last, err := r.LatestSequence()
			if err != nil {
				return err
			}
			if last < uint64(events) {
				t.Errorf("iteration %d: latest sequence %d below the %d acked events", it, last, events)
			}
			var seq uint64
			for {
				page, err := r.Events(seq, 0)
				if err != nil {
					return err
				}
				if len(page) == 0 {
					break
				}
				for _, ev := range page {
					if ev.Seq != seq+1 {
						t.Fatalf("iteration %d: sequence %d follows %d", it, ev.Seq, seq)
					}
					seq = ev.Seq
				}
			}
			if seq != last {
				t.Errorf("iteration %d: log ends at %d, latest sequence %d", it, seq, last)
			}
			return nil
		})
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kill -9 iterations, %d acked writes and events, %d lost, in %v", iterations, events, losses, time.Since(start).Round(time.Millisecond))
	if losses > 0 {
		t.Fatalf("%d acknowledged writes lost", losses)
	}
}

// runUntilAcked starts a child on dir, reads want acks from it, SIGKILLs it
// at once and returns the number of writes it acknowledged.
func runUntilAcked(t *testing.T, exe, dir string, it, want int) int {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^TestDurabilityAfterKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), kill9Env+"="+dir, kill9Env+"_ITER="+strconv.Itoa(it))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got, next := 0, 0
	sc := bufio.NewScanner(out)
	for got < want && sc.Scan() {
		n, ok := strings.CutPrefix(sc.Text(), "acked ")
		if !ok {
			continue
		}
		v, err := strconv.Atoi(n)
		if err != nil || v != next {
			_ = cmd.Process.Kill()
			t.Fatalf("iteration %d: child said %q, want acked %d", it, sc.Text(), next)
		}
		next++
		got++
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if got < want {
		t.Fatalf("iteration %d: child stopped after %d of %d acks: %s", it, got, want, stderr.String())
	}
	return next
}

// kill9Child commits until it is killed: write n is one CommitKV put and
// one Event, then "acked n" on stdout.
func kill9Child(dir, iter string) {
	it, err := strconv.Atoi(iter)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad iteration:", iter)
		os.Exit(2)
	}
	db, err := Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(30 * time.Second) // a parent that died leaves no orphan for long
	for n := 0; time.Now().Before(deadline); n++ {
		key := durKey(it, n)
		_, err := db.CommitKV("dur", protocol.KVCommitParams{
			Checks: []protocol.KVCheck{{Namespace: "dur", Key: key, Absent: true}},
			Puts:   []protocol.KVPut{{Namespace: "dur", Key: key, Value: []byte("v" + key)}},
		}, Limits{})
		if err == nil {
			err = db.Update(func(tx *Tx) error {
				_, _, err := tx.Accept(EventInput{Scope: "s", Source: "dur", Type: "dur.tick", DeliveryID: key}, Limits{})
				return err
			})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "acked %d\n", n)
	}
	os.Exit(3)
}
