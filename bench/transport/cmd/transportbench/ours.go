package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/bench/transport/internal/benchbin"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// oursRunner runs the workload through session.Start and session.Call, as
// the daemon calls an extension.
type oursRunner struct {
	bins binaries
	work string
	cfg  config
}

func (r *oursRunner) name() string { return "ours" }

// benchHost is the host side of the workload: what a real host would
// serve, minus storage (artifact bytes are counted, not kept).
type benchHost struct {
	mu      sync.Mutex
	written int64
	// order holds a chunk that arrives ahead: the host announces the
	// daemon's artifact window, so a chunk may be served while the one
	// before it is still being written.
	order  protocol.ChunkOrder
	stamps *stamps
}

func newBenchHost() *benchHost {
	return &benchHost{stamps: newStamps()}
}

func (h *benchHost) table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Handle(t, protocol.MethodKVGet, func(context.Context, protocol.KVGetParams) (protocol.KVGetResult, error) {
		return protocol.KVGetResult{}, nil
	})
	jsonrpc.Handle(t, protocol.MethodKVCommit, func(_ context.Context, p protocol.KVCommitParams) (protocol.KVCommitResult, error) {
		for _, put := range p.Puts {
			n, _ := strconv.ParseInt(string(put.Value), 10, 64)
			h.stamps.put(put.Key, n)
		}
		return protocol.KVCommitResult{}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactCreate, func(context.Context, protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
		h.mu.Lock()
		h.written = 0
		h.mu.Unlock()
		return protocol.ArtifactCreateResult{Artifact: "a1"}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactWrite, func(ctx context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		ahead := func() bool { return p.Offset > h.written }
		if err := h.order.Await(ctx, &h.mu, p, protocol.ArtifactAheadWaitMillis*time.Millisecond, ahead); err != nil {
			return protocol.ArtifactWriteResult{}, err
		}
		if p.Offset != h.written {
			return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict, "offset %d, have %d", p.Offset, h.written)
		}
		h.written += int64(len(p.Data))
		h.order.Moved()
		return protocol.ArtifactWriteResult{Size: h.written}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactCommit, func(context.Context, protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return protocol.ArtifactCommitResult{Artifact: "a1", Size: h.written}, nil
	})
	return t
}

// coldWarm times a cold start (a fresh copy of the binary, to its first
// answered call) and a warm restart (the same binary again), and returns
// the restarted session.
func (r *oursRunner) coldWarm(f figures, host *benchHost) (*session.Session, session.Package, error) {
	ctx := context.Background()
	echo := workload.Echo{Text: workload.EchoText}
	fresh, err := freshCopy(r.bins.ours, r.work)
	if err != nil {
		return nil, session.Package{}, err
	}
	pkg, err := benchbin.PackageAs(fresh, r.bins.ours)
	if err != nil {
		return nil, pkg, err
	}
	t := time.Now()
	s, err := r.start(pkg, host, nil)
	if err != nil {
		return nil, pkg, err
	}
	if _, err := benchbin.Call[workload.Echo](ctx, s, "bench.echo", echo); err != nil {
		s.Close(ctx)
		return nil, pkg, err
	}
	f.add("cold_start_ms", ms(time.Since(t)))
	s.Close(ctx)

	t = time.Now()
	if s, err = r.start(pkg, host, nil); err != nil {
		return nil, pkg, err
	}
	if _, err := benchbin.Call[workload.Echo](ctx, s, "bench.echo", echo); err != nil {
		s.Close(ctx)
		return nil, pkg, err
	}
	f.add("warm_restart_ms", ms(time.Since(t)))
	return s, pkg, nil
}

func (r *oursRunner) starts(f figures) error {
	s, _, err := r.coldWarm(f, newBenchHost())
	if err != nil {
		return err
	}
	return s.Close(context.Background())
}

func (r *oursRunner) start(pkg session.Package, host *benchHost, versions []int) (*session.Session, error) {
	return session.Start(context.Background(), pkg, session.Options{
		Host:       host.table(),
		HostInfo:   protocol.HostInfo{Name: "transportbench", Version: "1"},
		Initialize: protocol.InitializeParams{ArtifactWindow: protocol.ArtifactWindow},
		Versions:   versions,
		Backoff:    session.Backoff{Min: time.Hour},
	})
}

func (r *oursRunner) round(f figures) error {
	ctx := context.Background()
	host := newBenchHost()
	echo := workload.Echo{Text: workload.EchoText}

	s, pkg, err := r.coldWarm(f, host)
	if err != nil {
		return err
	}

	// Version refusal.
	t := time.Now()
	if _, err := r.start(pkg, host, []int{99}); !errors.Is(err, protocol.ErrUnsupportedProtocolVersion) {
		return fmt.Errorf("version refusal: %v", err)
	}
	f.add("version_refusal_ms", ms(time.Since(t)))

	doEcho := func() error {
		got, err := benchbin.Call[workload.Echo](ctx, s, "bench.echo", echo)
		if err == nil && got.Text != echo.Text {
			err = fmt.Errorf("answered %q", got.Text)
		}
		return err
	}
	if err := sequential(f, r.cfg.echoes, doEcho); err != nil {
		return err
	}
	if err := concurrent(f, r.cfg.concurrent, r.cfg.perWorker, doEcho); err != nil {
		return err
	}

	// Host callbacks, timed inside the extension.
	cb, err := benchbin.Call[workload.CallbackTimes](ctx, s, "bench.callbacks", workload.Callbacks{N: r.cfg.callbacks})
	if err != nil {
		return fmt.Errorf("callbacks: %w", err)
	}
	f.add("callback_p50_us", nanosP50(cb.Nanos))

	// Artifacts in acknowledged chunks.
	for _, chunk := range artifactChunks {
		t := time.Now()
		up, err := benchbin.Call[workload.Uploaded](ctx, s, "bench.upload", workload.Upload{Bytes: r.cfg.artifact, Chunk: chunk.size})
		if err != nil || up.Size != int64(r.cfg.artifact) {
			return fmt.Errorf("upload: %+v %v", up, err)
		}
		f.add(chunk.key, float64(r.cfg.artifact)/(1<<20)/time.Since(t).Seconds())
	}

	// Cancel seen by the extension.
	err = cancelSeen(f, r.cfg.cancels, func(ctx context.Context, key string) error {
		_, err := benchbin.Call[workload.Echo](ctx, s, "bench.wait", workload.Wait{Key: key})
		return err
	}, host.stamps.seen)
	if err != nil {
		return err
	}

	// Crash detected by the host, on a freshly started process, so the
	// figure is the detection and not the teardown of the heap the
	// uploads above grew.
	s.Close(ctx)
	for i := 0; i < r.cfg.crashes; i++ {
		if s, err = r.start(pkg, host, nil); err != nil {
			return err
		}
		if _, err := benchbin.Call[workload.Echo](ctx, s, "bench.echo", echo); err != nil {
			return err
		}
		file := filepath.Join(r.work, fmt.Sprintf("crash-ours-%d", time.Now().UnixNano()))
		_, err := benchbin.Call[workload.Echo](ctx, s, "bench.crash", workload.Crash{File: file})
		detected := time.Now()
		if !errors.Is(err, protocol.ErrTransport) {
			return fmt.Errorf("crash: %v", err)
		}
		died, err := workload.ReadTime(file)
		if err != nil {
			return err
		}
		f.add("crash_detected_ms", ms(detected.Sub(died)))
		s.Close(ctx)
	}
	return nil
}

func nanosP50(ns []int64) float64 {
	ds := make([]time.Duration, len(ns))
	for i, n := range ns {
		ds[i] = time.Duration(n)
	}
	return percentile(ds, 0.5)
}
