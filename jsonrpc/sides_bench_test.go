package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
)

// The in-process echo counts both ends together. These two put a Conn on
// one end only and a hand-written peer that allocates nothing on the other,
// so allocs/op is what one side of an echo costs: the side that serves it
// (an extension answering) and the side that calls (a host asking).

// echoText is the benchmarks' message, the same as BenchmarkInProcessEcho's.
const echoText = "a short message of about the size the seed measured, give or take"

// BenchmarkServingSideEcho is one echo served by a Conn, the request written
// and the answer read by a raw peer.
func BenchmarkServingSideEcho(b *testing.B) {
	aR, aW, bR, bW := pipePair(b)
	c := New(bR, bW, Options{Peer: "raw", Handlers: echoTable()})
	b.Cleanup(func() { c.Close(); aR.Close(); aW.Close() })
	head := []byte(`{"jsonrpc":"2.0","method":"echo","params":{"text":"` + echoText + `"},"id":`)
	want := []byte(`"result":{"text":"` + echoText + `"}`)
	line := make([]byte, 0, 256)
	in := bufio.NewReaderSize(aR, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		line = append(strconv.AppendInt(append(line[:0], head...), int64(i), 10), '}', '\n')
		if _, err := aW.Write(line); err != nil {
			b.Fatal(err)
		}
		answer, err := in.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(answer, want) {
			b.Fatalf("answer %q has no %s", answer, want)
		}
	}
}

// BenchmarkCallingSideEcho is one echo called through a Conn, answered by a
// raw peer that copies the request's id into a fixed answer.
func BenchmarkCallingSideEcho(b *testing.B) {
	aR, aW, bR, bW := pipePair(b)
	c := New(aR, aW, Options{Peer: "raw"})
	b.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })
	go rawEchoPeer(bR, bW, []byte(`{"jsonrpc":"2.0","result":{"text":"`+echoText+`"},"id":`))
	ctx := context.Background()
	in := echoParams{Text: echoText}
	var out echoParams
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Call(ctx, "echo", in, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if out.Text != echoText {
		b.Fatalf("answered %q", out.Text)
	}
}

// rawEchoPeer answers every request line with head, the request's id and a
// closing brace, until its pipe closes. It allocates nothing per line.
func rawEchoPeer(r, w *os.File, head []byte) {
	in := bufio.NewReaderSize(r, 4096)
	key := []byte(`"id":`)
	answer := make([]byte, 0, 256)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		at := bytes.LastIndex(line, key)
		if at < 0 {
			continue
		}
		id := line[at+len(key):]
		end := bytes.IndexAny(id, ",}")
		if end < 0 {
			continue
		}
		answer = append(append(append(answer[:0], head...), id[:end]...), '}', '\n')
		if _, err := w.Write(answer); err != nil {
			return
		}
	}
}
