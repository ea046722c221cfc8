//go:build unix

package jsonrpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// readCounter is a pipe's read end as a wrapper sees it: it counts the
// reads that reach it and notes the end of the stream, as the session's
// pipe from an extension does.
type readCounter struct {
	f     *os.File
	reads atomic.Int32
	eof   atomic.Bool
}

func (r *readCounter) Read(b []byte) (int, error) {
	r.reads.Add(1)
	n, err := r.f.Read(b)
	if errors.Is(err, io.EOF) {
		r.eof.Store(true)
	}
	return n, err
}

func (r *readCounter) Close() error { return r.f.Close() }

// polledReader lends the pipe's descriptor, so the connection may read it
// directly.
type polledReader struct{ *readCounter }

func (r polledReader) SyscallConn() (syscall.RawConn, error) { return r.f.SyscallConn() }
func (r polledReader) SetReadDeadline(t time.Time) error     { return r.f.SetReadDeadline(t) }

// TestAPolledPipeIsReadDirectlyAndItsEndThroughRead serves calls sent one
// at a time, one of them longer than a direct read takes at once, over a
// pipe whose wrapper lends its descriptor: the lines are read with the
// system call made directly, and only the end of the stream goes through
// the wrapper's Read, which notes it. A wrapper that does not lend its
// descriptor (the negative control) has every line read through it.
func TestAPolledPipeIsReadDirectlyAndItsEndThroughRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		polled bool
	}{
		{"polled", true},
		{"negative control: a plain reader", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aR, aW, bR, bW := pipePair(t)
			counter := &readCounter{f: aR}
			var r io.Reader = counter
			if tc.polled {
				r = polledReader{counter}
			}
			c := New(r, aW, Options{Handlers: echoTable()})
			t.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })
			in := bufio.NewReaderSize(bR, 1<<20)
			const calls = 20
			for i := 1; i <= calls; i++ {
				text := fmt.Sprintf("m%d", i)
				if i == calls/2 {
					text = strings.Repeat("x", 3*rawSyscallMax)
				}
				req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":{"text":%q},"id":%d}`+"\n", text, i)
				if _, err := io.WriteString(bW, req); err != nil {
					t.Fatal(err)
				}
				a := readWireAnswer(t, readLines(t, in, 1)[0])
				if string(a.ID) != fmt.Sprint(i) || !strings.Contains(string(a.Result), text) {
					t.Fatalf("answer %d: id %s, %d bytes of result", i, a.ID, len(a.Result))
				}
			}
			bW.Close()
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the connection did not end when the pipe did")
			}
			if !counter.eof.Load() {
				t.Fatal("the end of the stream never reached the wrapper's Read")
			}
			reads := counter.reads.Load()
			if tc.polled && reads != 1 {
				t.Fatalf("the wrapper's Read was called %d times; want once, for the end", reads)
			}
			if !tc.polled && reads < calls {
				t.Fatalf("the wrapper's Read was called %d times for %d lines", reads, calls)
			}
		})
	}
}
