package toolbelt

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
)

// BenchmarkToolbeltHandlerCall is one handler call through the toolbelt
// with a fresh request ID: the client over the Unix socket, the token and
// grant checks, the package call (in process here) and the synced commit
// of its replay record.
func BenchmarkToolbeltHandlerCall(b *testing.B) {
	r := newRig(b)
	tb := r.client(tokenA)
	ctx := context.Background()
	in := jsontext.Value(`{"text":"hello"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := tb.Call(ctx, client.ToolbeltRequest{Operation: "notes.add", Input: in, RequestID: fmt.Sprintf("rq-%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolbeltReplay is a retry answered from the replay record.
func BenchmarkToolbeltReplay(b *testing.B) {
	r := newRig(b)
	tb := r.client(tokenA)
	ctx := context.Background()
	req := client.ToolbeltRequest{Operation: "notes.add", Input: jsontext.Value(`{"text":"hello"}`), RequestID: "rq-once"}
	if _, _, err := tb.Call(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ans, _, err := tb.Call(ctx, req); err != nil || !ans.Replayed {
			b.Fatal(ans, err)
		}
	}
}
