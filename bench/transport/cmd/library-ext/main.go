// Command library-ext is the workload's extension on go.lsp.dev/jsonrpc2
// v1.0.1 alone: the library's Conn over its own newline-delimited stream on
// stdin and stdout, handlers written against its Handler type, and nothing
// of Open Conduit's (no sdk, jsonrpc or protocol package). Set beside
// ours-ext, it shows what our layers cost on top of the library.
//
// Framing: jsonrpc2.NewStream is the LSP Content-Length header framing, so
// this uses jsonrpc2.NewNDJSONStream, the library's own newline-delimited
// stream: one JSON object per line, written with one write per message,
// the same line protocol ours speaks.
//
// Handlers: echo, crash and initialize run inline on the library's read
// goroutine, its fastest path (no goroutine, no handoff; the answer is
// written by the goroutine that read the call). The handlers that call the
// host back (callbacks, upload, wait) release the reader with jsonrpc2.Async
// first: the answers to their callbacks come in on that reader, so inline
// they would deadlock. That is also how ours splits the work (inline when
// quick, released for calls that call the peer back), so each side gets its
// best shape. Cancellation is a small table of the waiting calls' cancel
// functions, consulted by the $/cancelRequest notification (served inline,
// so it is seen as soon as it is read), rather than the library's
// CancelHandler, which would add a context.WithCancel to every call.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/bench/transport/internal/cpuprof"
	"github.com/open-conduit/open-conduit/bench/transport/library"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

// ext serves the workload on one connection.
type ext struct {
	conn jsonrpc2.Conn

	mu      sync.Mutex
	waiting map[int64]context.CancelFunc // bench.wait calls, by request id
}

// pipes is the protocol's two stdio files as one io.ReadWriteCloser.
type pipes struct {
	in, out *os.File
}

func (p pipes) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.out.Write(b) }

func (p pipes) Close() error {
	err := p.out.Close()
	if e := p.in.Close(); err == nil {
		err = e
	}
	return err
}

func main() {
	in, out, err := takeStdio()
	if err != nil {
		fmt.Fprintln(os.Stderr, "library-ext:", err)
		os.Exit(1)
	}
	e := &ext{waiting: map[int64]context.CancelFunc{}}
	e.conn = jsonrpc2.NewConn(jsonrpc2.NewNDJSONStream(pipes{in, out}))
	stop := cpuprof.Start()
	e.conn.Go(context.Background(), e.handle)
	<-e.conn.Done()
	stop()
}

// decode reads a request's params with the library's codec (encoding/json/v2,
// as ours uses).
func decode[T any](req *jsonrpc2.Request) (T, error) {
	var v T
	if err := jsonrpc2.DefaultCodec.Unmarshal(req.Params(), &v); err != nil {
		return v, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", req.Method(), err)
	}
	return v, nil
}

func (e *ext) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method() {
	case library.MethodEcho:
		return decode[workload.Echo](req)
	case library.MethodCancel:
		c, err := decode[library.Cancel](req)
		if err != nil {
			return nil, nil
		}
		e.mu.Lock()
		cancel := e.waiting[c.ID]
		e.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil, nil
	case library.MethodInitialize:
		in, err := decode[library.Initialize](req)
		if err != nil {
			return nil, err
		}
		for _, v := range in.Versions {
			if v == library.Version {
				return library.Initialize{Versions: []int{library.Version}}, nil
			}
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "unsupported protocol versions %v; this extension speaks %d", in.Versions, library.Version)
	case library.MethodCallbacks:
		jsonrpc2.Async(ctx)
		return e.callbacks(ctx, req)
	case library.MethodUpload:
		jsonrpc2.Async(ctx)
		return e.upload(ctx, req)
	case library.MethodWait:
		jsonrpc2.Async(ctx)
		return e.wait(ctx, req)
	case library.MethodCrash:
		in, err := decode[workload.Crash](req)
		if err != nil {
			return nil, err
		}
		workload.WriteNow(in.File)
		os.Exit(3)
		return nil, nil
	}
	return jsonrpc2.MethodNotFoundHandler(ctx, req)
}

func (e *ext) callbacks(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	in, err := decode[workload.Callbacks](req)
	if err != nil {
		return nil, err
	}
	out := workload.CallbackTimes{Nanos: make([]int64, 0, in.N)}
	get := library.KVGet{Namespace: "bench", Key: "k"}
	var v library.KVValue
	for i := 0; i < in.N; i++ {
		t := time.Now()
		if _, err := e.conn.Call(ctx, library.MethodKVGet, get, &v); err != nil {
			return nil, err
		}
		out.Nanos = append(out.Nanos, time.Since(t).Nanoseconds())
	}
	return out, nil
}

func (e *ext) upload(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	in, err := decode[workload.Upload](req)
	if err != nil {
		return nil, err
	}
	var a library.Artifact
	if _, err := e.conn.Call(ctx, library.MethodArtifactCreate, library.ArtifactCreate{Name: "upload.bin"}, &a); err != nil {
		return nil, err
	}
	data := workload.Pattern(in.Bytes)
	chunks := 0
	var ack library.ArtifactSize
	for off := 0; off < len(data); off += in.Chunk {
		chunk := data[off:min(off+in.Chunk, len(data))]
		w := library.ArtifactWrite{Artifact: a.Artifact, Offset: int64(off), Data: chunk}
		if _, err := e.conn.Call(ctx, library.MethodArtifactWrite, w, &ack); err != nil {
			return nil, err
		}
		if ack.Size != int64(off+len(chunk)) {
			return nil, fmt.Errorf("the host acknowledged %d bytes, wrote %d", ack.Size, off+len(chunk))
		}
		chunks++
	}
	if _, err := e.conn.Call(ctx, library.MethodArtifactCommit, library.Artifact{Artifact: a.Artifact}, &a); err != nil {
		return nil, err
	}
	return workload.Uploaded{Size: a.Size, Chunks: chunks}, nil
}

// wait records that it started (with its request id, which the host's
// cancel names), waits for the cancel and records when it saw it.
func (e *ext) wait(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	in, err := decode[workload.Wait](req)
	if err != nil {
		return nil, err
	}
	id, _ := req.ID().Number()
	// Parented on the connection's context, not the request's: a cancel
	// observed through the request context would cost a goroutine
	// propagating it, and only the host's $/cancelRequest ends this wait.
	wctx, cancel := context.WithCancel(jsonrpc2.DetachContext(ctx))
	defer cancel()
	e.mu.Lock()
	e.waiting[id] = cancel
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiting, id)
		e.mu.Unlock()
	}()
	started := library.Record{Key: in.Key + ".started", NS: time.Now().UnixNano(), ID: id}
	if _, err := e.conn.Call(ctx, library.MethodRecord, started, nil); err != nil {
		return nil, err
	}
	<-wctx.Done()
	seen := library.Record{Key: in.Key, NS: time.Now().UnixNano(), ID: id}
	if _, err := e.conn.Call(ctx, library.MethodRecord, seen, nil); err != nil {
		return nil, err
	}
	return workload.Echo{}, nil
}
