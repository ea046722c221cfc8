package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/bench/transport/library"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

// libraryRunner runs the workload over go.lsp.dev/jsonrpc2 alone: the
// library's Conn on the host's ends of the child's pipes, its NDJSON stream,
// host handlers inline on its read goroutine, against cmd/library-ext. What
// ours costs over these figures is what our layers add to the library.
type libraryRunner struct {
	bins binaries
	work string
	cfg  config
}

func (r *libraryRunner) name() string { return "library" }

// libHost serves the extension's callbacks: what benchHost serves ours,
// the same way (artifact bytes counted, not kept).
type libHost struct {
	mu      sync.Mutex
	written int64
	ids     map[string]int64 // the request id each record came from
	stamps  *stamps
}

func newLibHost() *libHost {
	return &libHost{ids: map[string]int64{}, stamps: newStamps()}
}

// handle runs inline on the library's read goroutine: every callback here
// answers at once and calls nothing back, so releasing the reader would
// only add a goroutine per callback.
func (h *libHost) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method() {
	case library.MethodKVGet:
		if _, err := decode[library.KVGet](req); err != nil {
			return nil, err
		}
		return library.KVValue{}, nil
	case library.MethodArtifactCreate:
		if _, err := decode[library.ArtifactCreate](req); err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.written = 0
		h.mu.Unlock()
		return library.Artifact{Artifact: "a1"}, nil
	case library.MethodArtifactWrite:
		w, err := decode[library.ArtifactWrite](req)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.Offset != h.written {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "offset %d, have %d", w.Offset, h.written)
		}
		h.written += int64(len(w.Data))
		return library.ArtifactSize{Size: h.written}, nil
	case library.MethodArtifactCommit:
		h.mu.Lock()
		defer h.mu.Unlock()
		return library.Artifact{Artifact: "a1", Size: h.written}, nil
	case library.MethodRecord:
		rec, err := decode[library.Record](req)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.ids[rec.Key] = rec.ID
		h.mu.Unlock()
		h.stamps.put(rec.Key, rec.NS)
		return nil, nil
	}
	return jsonrpc2.MethodNotFoundHandler(ctx, req)
}

// decode reads a request's params with the library's codec.
func decode[T any](req *jsonrpc2.Request) (T, error) {
	var v T
	if err := jsonrpc2.DefaultCodec.Unmarshal(req.Params(), &v); err != nil {
		return v, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", req.Method(), err)
	}
	return v, nil
}

// libChild is one running library-ext and the host's connection to it.
type libChild struct {
	cmd  *exec.Cmd
	conn jsonrpc2.Conn
}

// hostPipes is the host's ends of the child's stdout and stdin as one
// io.ReadWriteCloser for the library's stream. os.Pipe files are already
// non-blocking and served by Go's poller, as session's are.
type hostPipes struct {
	out, in *os.File
}

func (p hostPipes) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p hostPipes) Write(b []byte) (int, error) { return p.in.Write(b) }

func (p hostPipes) Close() error {
	err := p.in.Close()
	if e := p.out.Close(); err == nil {
		err = e
	}
	return err
}

// startLibrary starts bin on fresh pipes and starts reading its stdout.
func startLibrary(bin string, host *libHost) (*libChild, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	startErr := cmd.Start()
	// The child holds its ends now; ours would hide its EOF.
	inR.Close()
	outW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		return nil, startErr
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewNDJSONStream(hostPipes{out: outR, in: inW}))
	conn.Go(context.Background(), host.handle)
	return &libChild{cmd: cmd, conn: conn}, nil
}

// close closes the connection (the child reads EOF and exits) and reaps
// the child.
func (c *libChild) close() {
	_ = c.conn.Close()
	_ = c.cmd.Wait()
}

func (c *libChild) echo(ctx context.Context, in workload.Echo) error {
	var out workload.Echo
	if _, err := c.conn.Call(ctx, library.MethodEcho, in, &out); err != nil {
		return err
	}
	if out.Text != in.Text {
		return fmt.Errorf("answered %q", out.Text)
	}
	return nil
}

// coldWarm times a cold start (a fresh copy of the binary, to its first
// answered call) and a warm restart (the same binary again), and returns
// the restarted child and the binary.
func (r *libraryRunner) coldWarm(f figures, host *libHost) (*libChild, string, error) {
	ctx := context.Background()
	echo := workload.Echo{Text: workload.EchoText}
	fresh, err := freshCopy(r.bins.library, r.work)
	if err != nil {
		return nil, "", err
	}
	t := time.Now()
	c, err := startLibrary(fresh, host)
	if err != nil {
		return nil, fresh, err
	}
	if err := c.echo(ctx, echo); err != nil {
		c.close()
		return nil, fresh, fmt.Errorf("cold start: %w", err)
	}
	f.add("cold_start_ms", ms(time.Since(t)))
	c.close()

	t = time.Now()
	if c, err = startLibrary(fresh, host); err != nil {
		return nil, fresh, err
	}
	if err := c.echo(ctx, echo); err != nil {
		c.close()
		return nil, fresh, fmt.Errorf("warm restart: %w", err)
	}
	f.add("warm_restart_ms", ms(time.Since(t)))
	return c, fresh, nil
}

func (r *libraryRunner) starts(f figures) error {
	c, _, err := r.coldWarm(f, newLibHost())
	if err != nil {
		return err
	}
	c.close()
	return nil
}

func (r *libraryRunner) round(f figures) error {
	ctx := context.Background()
	host := newLibHost()
	echo := workload.Echo{Text: workload.EchoText}

	c, fresh, err := r.coldWarm(f, host)
	if err != nil {
		return err
	}

	// Version refusal: the library has no handshake, so the workload's one
	// initialize call offers a version the extension does not speak, and
	// the figure runs to the refused process reaped, as ours does.
	t := time.Now()
	bad, err := startLibrary(fresh, host)
	if err != nil {
		return err
	}
	var rpcErr *jsonrpc2.Error
	_, err = bad.conn.Call(ctx, library.MethodInitialize, library.Initialize{Versions: []int{99}}, nil)
	bad.close()
	if !errors.As(err, &rpcErr) {
		return fmt.Errorf("version refusal: %v", err)
	}
	f.add("version_refusal_ms", ms(time.Since(t)))

	doEcho := func() error { return c.echo(ctx, echo) }
	if err := sequential(f, r.cfg.echoes, doEcho); err != nil {
		return err
	}
	if err := concurrent(f, r.cfg.concurrent, r.cfg.perWorker, doEcho); err != nil {
		return err
	}

	// Host callbacks, timed inside the extension.
	var cb workload.CallbackTimes
	if _, err := c.conn.Call(ctx, library.MethodCallbacks, workload.Callbacks{N: r.cfg.callbacks}, &cb); err != nil {
		return fmt.Errorf("callbacks: %w", err)
	}
	f.add("callback_p50_us", nanosP50(cb.Nanos))

	// Artifacts in acknowledged chunks.
	for _, chunk := range artifactChunks {
		t := time.Now()
		var up workload.Uploaded
		_, err := c.conn.Call(ctx, library.MethodUpload, workload.Upload{Bytes: r.cfg.artifact, Chunk: chunk.size}, &up)
		if err != nil || up.Size != int64(r.cfg.artifact) {
			return fmt.Errorf("upload: %+v %v", up, err)
		}
		f.add(chunk.key, float64(r.cfg.artifact)/(1<<20)/time.Since(t).Seconds())
	}

	// Cancel seen by the extension. The library's Conn.Call gives up on its
	// context without telling the peer, so the cancel is sent here, the
	// moment the context ends, naming the call by the id the extension
	// recorded with its start.
	err = cancelSeen(f, r.cfg.cancels, func(ctx context.Context, key string) error {
		stop := context.AfterFunc(ctx, func() {
			host.mu.Lock()
			id := host.ids[key+".started"]
			host.mu.Unlock()
			_ = c.conn.Notify(context.Background(), library.MethodCancel, library.Cancel{ID: id})
		})
		defer stop()
		_, err := c.conn.Call(ctx, library.MethodWait, workload.Wait{Key: key}, nil)
		return err
	}, host.stamps.seen)
	if err != nil {
		return err
	}

	// Crash detected by the host, on a freshly started process, so the
	// figure is the detection and not the teardown of the heap the
	// uploads above grew.
	c.close()
	for i := 0; i < r.cfg.crashes; i++ {
		if c, err = startLibrary(fresh, host); err != nil {
			return err
		}
		if err := c.echo(ctx, echo); err != nil {
			return err
		}
		file := filepath.Join(r.work, fmt.Sprintf("crash-library-%d", time.Now().UnixNano()))
		_, err := c.conn.Call(ctx, library.MethodCrash, workload.Crash{File: file}, nil)
		detected := time.Now()
		if err == nil {
			return fmt.Errorf("crash: no error")
		}
		died, err := workload.ReadTime(file)
		if err != nil {
			return err
		}
		f.add("crash_detected_ms", ms(detected.Sub(died)))
		c.close()
	}
	return nil
}
