// Command ours-ext is the workload's extension on Open Conduit's own SDK:
// the real sdk, jsonrpc and protocol packages, nothing copied.
package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/open-conduit/open-conduit/bench/transport/internal/cpuprof"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
	"github.com/open-conduit/open-conduit/sdk"
)

func extension() *sdk.Extension {
	return sdk.New("bench", sdk.Version("1.0.0")).
		Operation("bench.echo", sdk.Handler(func(_ context.Context, _ *sdk.Request, in workload.Echo) (workload.Echo, error) {
			return in, nil
		})).
		Operation("bench.callbacks", sdk.Handler(callbacks)).
		Operation("bench.upload", sdk.Handler(upload)).
		Operation("bench.wait", sdk.Handler(wait)).
		Operation("bench.crash", sdk.Handler(func(_ context.Context, _ *sdk.Request, in workload.Crash) (workload.Echo, error) {
			workload.WriteNow(in.File)
			os.Exit(3)
			return workload.Echo{}, nil
		}))
}

func callbacks(ctx context.Context, r *sdk.Request, in workload.Callbacks) (workload.CallbackTimes, error) {
	h := r.Host
	out := workload.CallbackTimes{Nanos: make([]int64, 0, in.N)}
	for i := 0; i < in.N; i++ {
		t := time.Now()
		if _, err := h.Get(ctx, "bench", "k"); err != nil {
			return out, err
		}
		out.Nanos = append(out.Nanos, time.Since(t).Nanoseconds())
	}
	return out, nil
}

func upload(ctx context.Context, r *sdk.Request, in workload.Upload) (workload.Uploaded, error) {
	w, err := r.Host.Artifact(ctx, sdk.ArtifactCreateParams{Name: "upload.bin"})
	if err != nil {
		return workload.Uploaded{}, err
	}
	data := workload.Pattern(in.Bytes)
	chunks := 0
	for off := 0; off < len(data); off += in.Chunk {
		if _, err := w.Write(data[off:min(off+in.Chunk, len(data))]); err != nil {
			return workload.Uploaded{}, err
		}
		chunks++
	}
	done, err := w.Commit()
	if err != nil {
		return workload.Uploaded{}, err
	}
	return workload.Uploaded{Size: done.Size, Chunks: chunks}, nil
}

func wait(ctx context.Context, r *sdk.Request, in workload.Wait) (workload.Echo, error) {
	// The cancel may come while this is answered: it must not end it.
	started := strconv.FormatInt(time.Now().UnixNano(), 10)
	if _, err := r.Host.Commit(context.WithoutCancel(ctx), sdk.NewBatch().Put("bench", in.Key+".started", []byte(started))); err != nil {
		return workload.Echo{}, err
	}
	<-ctx.Done()
	seen := time.Now().UnixNano()
	_, err := r.Host.Commit(context.WithoutCancel(ctx),
		sdk.NewBatch().Put("bench", in.Key, []byte(strconv.FormatInt(seen, 10))))
	return workload.Echo{}, err
}

func main() {
	stop := cpuprof.Start()
	code := sdk.Run(extension(), os.Args[1:])
	stop()
	os.Exit(code)
}
