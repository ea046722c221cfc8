package session_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/fixtures/transport"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/session"
)

// latencies records one duration per iteration and reports p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	at := func(q float64) float64 {
		return float64(l[min(len(l)-1, int(q*float64(len(l))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkEchoRoundTrip is one operation.call echo through session, jsonrpc
// and the SDK to a real subprocess and back.
func BenchmarkEchoRoundTrip(b *testing.B) {
	st := startTransport(b, nil)
	ctx := context.Background()
	in := transport.Text{Text: "a short message of about the size the reference run measured, give or take"}
	for i := 0; i < 200; i++ { // warm up
		if _, err := call[transport.Text](ctx, st.s, "transport.echo", in); err != nil {
			b.Fatal(err)
		}
	}
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if _, err := call[transport.Text](ctx, st.s, "transport.echo", in); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkNestedCallback is one extension-to-host kv.get made while the
// extension serves a host call, timed from the host over many callbacks.
func BenchmarkNestedCallback(b *testing.B) {
	st := startTransport(b, nil)
	ctx := context.Background()
	if _, err := call[transport.Count](ctx, st.s, "transport.nested", transport.Count{N: 200}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := call[transport.Count](ctx, st.s, "transport.nested", transport.Count{N: b.N}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkArtifact256K uploads 16 MiB in acknowledged 256 KiB chunks.
func BenchmarkArtifact256K(b *testing.B) { benchArtifact(b, 256<<10) }

// BenchmarkArtifact64K uploads 16 MiB in acknowledged 64 KiB chunks.
func BenchmarkArtifact64K(b *testing.B) { benchArtifact(b, 64<<10) }

func benchArtifact(b *testing.B, chunk int) {
	st := startTransport(b, nil)
	ctx := context.Background()
	const size = 16 << 20
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := call[transport.Uploaded](ctx, st.s, "transport.upload", transport.Upload{Bytes: size, Chunk: chunk}); err != nil {
			b.Fatal(err)
		}
		st.host.DropArtifacts()
	}
}

// BenchmarkConcurrentEcho is 32 callers at once.
func BenchmarkConcurrentEcho(b *testing.B) {
	st := startTransport(b, nil)
	ctx := context.Background()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := call[transport.Text](ctx, st.s, "transport.echo", transport.Text{Text: "x"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkColdStart is a fresh copy of a built extension, never run before,
// started through session.Start until its first echo is answered: what an
// install or an upgrade costs before the extension serves. The copy and the
// Close after it are outside the timer.
func BenchmarkColdStart(b *testing.B) {
	benchStart(b, true)
}

// BenchmarkWarmRestart is the same binary started again (session.Start to the
// first echo answered) after the last process was closed.
func BenchmarkWarmRestart(b *testing.B) {
	benchStart(b, false)
}

func benchStart(b *testing.B, fresh bool) {
	ctx := context.Background()
	pkg := session.Package{Dir: transportDir, Manifest: loadManifest(b, transportDir)}
	opts := session.Options{
		Host:     memhost.New(transport.Name).Table(),
		HostInfo: protocol.HostInfo{Name: "open-conduit-bench", Version: "0"},
	}
	in := transport.Text{Text: "first"}
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fresh {
			b.StopTimer()
			pkg.Dir = freshPackage(b)
			b.StartTimer()
		}
		t := time.Now()
		s, err := session.Start(ctx, pkg, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := call[transport.Text](ctx, s, "transport.echo", in); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		b.StopTimer()
		s.Close(ctx)
		b.StartTimer()
	}
	b.StopTimer()
	lat.report(b)
}

// freshPackage copies the transport package to a new directory, so its
// binary is one the system has never run from there.
func freshPackage(b *testing.B) string {
	dir := b.TempDir()
	for _, name := range []string{"transport-extension", protocol.ManifestFile} {
		data, err := os.ReadFile(filepath.Join(transportDir, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
