package pebblekv

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/internal/pause"
)

// BenchmarkFdatasyncAfterIdle times the system call under every synced
// commit, fdatasync of a small write to a file already allocated, in three
// ways taking turns: back to back, after the process paused 50 µs (about
// the time an unsynced kv.commit round trip takes, so about the host's idle
// gap between two synced kv.commits from one extension), and after it
// paused 1 ms. It reports each one's p50 and their ratios to back to back.
// On a virtual machine a sync after a pause is the slower, and more so the
// longer the pause; it is as slow when the CPU spins through the pause, so
// the cost is the disk path's going idle, not the CPU's. Pebble is not
// involved, so the difference is the machine's.
//
// The pauses are package pause's: a time.Sleep this short takes about a
// millisecond on Linux.
func BenchmarkFdatasyncAfterIdle(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "synced"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const size = 64 << 20
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		// A filesystem without fallocate gets a file of that size whose
		// blocks the writes allocate, the same for both ways of syncing.
		b.Logf("fallocate: %v; the file is sized, not allocated", err)
		if err := f.Truncate(size); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	record := make([]byte, 128)
	var off int64
	sync := func(idle time.Duration) time.Duration {
		if err := pause.For(idle); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := f.WriteAt(record, off); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		off = (off + int64(len(record))) % size
		return time.Since(start)
	}
	var busy, idle50, idle1ms []time.Duration
	for b.Loop() {
		// Turns of ten, so each back-to-back run is back to back.
		for range 10 {
			busy = append(busy, sync(0))
		}
		for range 10 {
			idle50 = append(idle50, sync(50*time.Microsecond))
		}
		for range 10 {
			idle1ms = append(idle1ms, sync(time.Millisecond))
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	bp, i50, i1 := p50(busy), p50(idle50), p50(idle1ms)
	b.ReportMetric(bp, "busy-p50-µs")
	b.ReportMetric(i50, "idle50µs-p50-µs")
	b.ReportMetric(i1, "idle1ms-p50-µs")
	b.ReportMetric(i50/bp, "idle50µs/busy")
	b.ReportMetric(i1/bp, "idle1ms/busy")
}
