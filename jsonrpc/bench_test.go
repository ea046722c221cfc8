package jsonrpc

import (
	"context"
	"os"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// rwc joins a read and a write pipe for the bare library.
type rwc struct {
	r *os.File
	w *os.File
}

func (x rwc) Read(p []byte) (int, error)  { return x.r.Read(p) }
func (x rwc) Write(p []byte) (int, error) { return x.w.Write(p) }
func (x rwc) Close() error                { x.r.Close(); return x.w.Close() }

// BenchmarkBareLibraryEcho is go.lsp.dev/jsonrpc2 alone, with inline (sync)
// and released (async) handlers: the floor our wrapper builds on.
func BenchmarkBareLibraryEcho(b *testing.B) {
	for _, async := range []bool{false, true} {
		name := "sync"
		if async {
			name = "async"
		}
		b.Run(name, func(b *testing.B) {
			aR, aW, bR, bW := pipePair(b)
			ca := jsonrpc2.NewConn(jsonrpc2.NewNDJSONStream(rwc{aR, aW}))
			cb := jsonrpc2.NewConn(jsonrpc2.NewNDJSONStream(rwc{bR, bW}))
			ca.Go(context.Background(), jsonrpc2.MethodNotFoundHandler)
			h := func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
				var p echoParams
				_ = jsonrpc2.DefaultCodec.Unmarshal(req.Params(), &p)
				return p, nil
			}
			if async {
				h = jsonrpc2.AsyncHandler(h)
			}
			cb.Go(context.Background(), h)
			in := echoParams{Text: "a short message of about the size the seed measured, give or take"}
			var out echoParams
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ca.Call(context.Background(), "echo", in, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawPipePingPong is a 200-byte line there and back over the same
// pipes: the physical limit.
func BenchmarkRawPipePingPong(b *testing.B) {
	aR, aW, bR, bW := pipePair(b)
	msg := make([]byte, 200)
	msg[199] = '\n'
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := bR.Read(buf)
			if err != nil {
				return
			}
			bW.Write(buf[:n])
		}
	}()
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		aW.Write(msg)
		got := 0
		for got < len(msg) {
			n, err := aR.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
}

// BenchmarkInProcessEcho is our Conn on both ends of real pipes in one
// process: the wrapper's cost over the bare library below.
func BenchmarkInProcessEcho(b *testing.B) {
	a, _ := connPair(b, Options{}, Options{Handlers: echoTable()})
	ctx := context.Background()
	in := echoParams{Text: "a short message of about the size the seed measured, give or take"}
	var out echoParams
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := a.Call(ctx, "echo", in, &out); err != nil {
			b.Fatal(err)
		}
	}
}
