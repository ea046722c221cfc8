package pebblekv

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFdatasyncAfterIdle times the system call under every synced
// commit, fdatasync of a small write to a file already allocated, in two
// ways taking turns: back to back, and after the process slept idle for
// 20 µs. It reports each one's p50 and their ratio. On a virtual machine the
// second is the slower (its halted CPU, and the host's disk thread, have to
// be woken again), and a kv.commit from an extension always comes after
// such a gap: the host waits idle for the request while it crosses the
// pipe. Pebble is not involved, so the difference is the machine's.
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
		if idle > 0 {
			time.Sleep(idle)
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
	var busy, idle []time.Duration
	for b.Loop() {
		// Turns of ten, so each back-to-back run is back to back.
		for range 10 {
			busy = append(busy, sync(0))
		}
		for range 10 {
			idle = append(idle, sync(20*time.Microsecond))
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	bp, ip := p50(busy), p50(idle)
	b.ReportMetric(bp, "busy-p50-µs")
	b.ReportMetric(ip, "idle-p50-µs")
	b.ReportMetric(ip/bp, "idle/busy")
}
