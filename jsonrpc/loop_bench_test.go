package jsonrpc

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// lineSource hands out n copies of a line, then blocks until stop: a peer
// that writes as fast as it is read, with no syscall in the way.
type lineSource struct {
	line []byte
	n    int
	off  int
	stop chan struct{}
}

func (s *lineSource) Read(p []byte) (int, error) {
	if s.n == 0 {
		<-s.stop
		return 0, context.Canceled
	}
	w := 0
	for w < len(p) && s.n > 0 {
		k := copy(p[w:], s.line[s.off:])
		w += k
		s.off += k
		if s.off == len(s.line) {
			s.off = 0
			s.n--
		}
	}
	return w, nil
}

// answerSink counts the answer lines written and signals when want have
// come.
type answerSink struct {
	want int64
	seen atomic.Int64
	done chan struct{}
}

func (s *answerSink) Write(p []byte) (int, error) {
	if s.seen.Add(int64(bytes.Count(p, []byte{'\n'}))) == s.want {
		close(s.done)
	}
	return len(p), nil
}

// BenchmarkServeLines is the serving side's own cost per call, with no pipe
// and no peer: request lines come from memory as fast as they are read, are
// served by a Conn and answered into a counter. ns/op is the connection
// (read, classify, dispatch, answer) plus the handler's decode and encode.
func BenchmarkServeLines(b *testing.B) {
	chunk := strings.Repeat("QUJD", 256<<10/4*4/3)
	for _, tc := range []struct {
		name, method, params string
	}{
		{"echo", "echo", `{"text":"` + echoTextLoop + `"}`},
		{"chunk256K", "chunk", `{"artifact":"a1","offset":0,"data":"` + chunk + `"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tbl := echoTable()
			tbl.HandleRaw("chunk", func(ctx context.Context, p jsontext.Value) (any, error) {
				return len(p), nil
			})
			line := []byte(`{"jsonrpc":"2.0","method":"` + tc.method + `","params":` + tc.params + `,"id":` + strconv.Itoa(7) + "}\n")
			src := &lineSource{line: line, n: b.N, stop: make(chan struct{})}
			sink := &answerSink{want: int64(b.N), done: make(chan struct{})}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			c := New(src, sink, Options{Handlers: tbl, MaxInflight: 1 << 20})
			<-sink.done
			b.StopTimer()
			close(src.stop)
			c.Close()
		})
	}
}

const echoTextLoop = "a short message of about the size the seed measured, give or take"
