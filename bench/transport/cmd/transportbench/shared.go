package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The measurements every protocol transport shares; each transport gives
// them its own way to make the call.

// artifactChunk is a chunk size an upload is made in, with the figure it
// records.
type artifactChunk struct {
	size int
	key  string
}

// artifactUploads is how many uploads a round makes in each chunk size,
// each a sample: one upload of 16 MiB is 60-150 ms, and from one to the
// next it moved as much as the echo does on this machine.
const artifactUploads = 3

// artifactChunks are the uploads every transport makes in a round, the
// two sizes taken in turn.
var artifactChunks = func() []artifactChunk {
	var c []artifactChunk
	for range artifactUploads {
		c = append(c, artifactChunk{256 << 10, "artifact_256k_mibs"}, artifactChunk{64 << 10, "artifact_64k_mibs"})
	}
	return c
}()

// sequential times n echoes, one after another, and records p50 and p99.
func sequential(f figures, n int, echo func() error) error {
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := echo(); err != nil {
			return fmt.Errorf("echo %d: %w", i, err)
		}
		lat = append(lat, time.Since(t))
	}
	f.add("echo_p50_us", percentile(lat, 0.5))
	f.add("echo_p99_us", percentile(lat, 0.99))
	return nil
}

// concurrentBatches is how many batches concurrent records after its
// warm-up batch. One batch of 32 × 50 takes 10-20 ms here, and batch to
// batch the rate moved by a third on a quiet machine: each is a sample,
// and the figure is their median with the other rounds'.
const concurrentBatches = 5

// concurrent runs workers callers of per echoes each at once, once to warm
// up and then concurrentBatches times, and records each batch's calls per
// second.
func concurrent(f figures, workers, per int, echo func() error) error {
	for b := 0; b <= concurrentBatches; b++ {
		t := time.Now()
		if err := concurrentBatch(workers, per, echo); err != nil {
			return err
		}
		if b > 0 {
			f.add("concurrent_calls_per_s", float64(workers*per)/time.Since(t).Seconds())
		}
	}
	return nil
}

// concurrentBatch runs workers callers of per echoes each at once.
func concurrentBatch(workers, per int, echo func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := echo(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("concurrent echo: %w", err)
	}
	return nil
}

// cancelSeen starts a call that waits until cancelled, waits for the
// extension to say the call reached its handler (it records key+".started"),
// cancels it, and records how long after the cancel the extension saw it
// (by the clock it recorded under the key), n times.
func cancelSeen(f figures, n int, wait func(ctx context.Context, key string) error, recorded func(key string) (time.Time, error)) error {
	var lat []time.Duration
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("cancel-%d", i)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wait(ctx, key) }()
		// A cancel sent before the call reaches its handler measures
		// nothing, and on a loaded machine no fixed pause is long enough.
		if _, err := recorded(key + ".started"); err != nil {
			cancel()
			return err
		}
		t0 := time.Now()
		cancel()
		<-done
		at, err := recorded(key)
		if err != nil {
			return err
		}
		lat = append(lat, at.Sub(t0))
	}
	f.add("cancel_seen_us", percentile(lat, 0.5))
	return nil
}

// stamps are the clock readings an extension records with the host under
// keys (the cancel measurement's), and the channel that tells each key as
// it comes. Every transport's host keeps them the same way.
type stamps struct {
	mu     sync.Mutex
	at     map[string]int64
	notify chan string
}

func newStamps() *stamps {
	return &stamps{at: map[string]int64{}, notify: make(chan string, 16)}
}

// put keeps ns under key and tells the key.
func (s *stamps) put(key string, ns int64) {
	s.mu.Lock()
	s.at[key] = ns
	s.mu.Unlock()
	s.notify <- key
}

// seen waits for key to be told and answers the time recorded under it.
func (s *stamps) seen(key string) (time.Time, error) {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case k := <-s.notify:
			if k == key {
				s.mu.Lock()
				defer s.mu.Unlock()
				return time.Unix(0, s.at[key]), nil
			}
		case <-timeout:
			return time.Time{}, fmt.Errorf("the extension never recorded %s", key)
		}
	}
}
