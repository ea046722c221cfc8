package jsonrpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// gatedWriter counts writes and holds the first one until open is closed
// (or a minute has passed, so a broken test fails instead of hanging).
type gatedWriter struct {
	w      io.Writer
	open   chan struct{}
	writes atomic.Int32
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if g.writes.Add(1) == 1 {
		select {
		case <-g.open:
		case <-time.After(time.Minute):
		}
	}
	return g.w.Write(p)
}

// lineCounter is an observer that counts the lines written and closes
// reached when the count gets to n.
type lineCounter struct {
	n       int32
	written atomic.Int32
	last    atomic.Int32 // the length of the last line written
	reached chan struct{}
}

func newLineCounter(n int32) *lineCounter {
	return &lineCounter{n: n, reached: make(chan struct{})}
}

func (o *lineCounter) Observe(outgoing bool, frame []byte) {
	if !outgoing {
		return
	}
	o.last.Store(int32(len(frame)) + 1)
	if o.written.Add(1) == o.n {
		close(o.reached)
	}
}

// peerLine is a request line as a raw peer read it.
type peerLine struct {
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
	ID     jsontext.Value `json:"id"`
}

// linePeer answers every request it reads with its params as the result,
// and sends each line it read, checked to be one valid request, on lines.
func linePeer(t *testing.T, r io.Reader, w io.Writer, lines chan<- peerLine) {
	t.Helper()
	go func() {
		in := bufio.NewReader(r)
		for {
			text, err := in.ReadString('\n')
			if err != nil {
				return
			}
			var l peerLine
			if err := json.Unmarshal([]byte(text), &l); err != nil || l.Method == "" {
				t.Errorf("the peer read a line that is not one request: %q (%v)", text, err)
				return
			}
			lines <- l
			if len(l.ID) == 0 {
				continue
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", l.ID, l.Params)
			if _, err := io.WriteString(w, answer); err != nil {
				return
			}
		}
	}()
}

// TestCallsMadeDuringAWriteShareTheNextWrite holds the first request's write
// until all 32 callers have framed theirs: the 31 queued behind it go out
// together in the next write, each whole and on its own line (two with
// U+2028 in them, which the guard escapes), and every call gets its own
// answer. With combining off, each line waits for the write before it and
// goes in a write of its own.
func TestCallsMadeDuringAWriteShareTheNextWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noCombine bool
		writes    int32
	}{
		{"combined", false, 2},
		{"negative control: combining off", true, 32},
	} {
		t.Run(tc.name, func(t *testing.T) { callsShareWrites(t, tc.noCombine, tc.writes) })
	}
}

func callsShareWrites(t *testing.T, noCombine bool, writes int32) {
	const callers = 32
	aR, aW, bR, bW := pipePair(t)
	obs := newLineCounter(callers)
	out := &gatedWriter{w: aW, open: obs.reached}
	c := New(aR, out, Options{Observer: obs, noCombine: noCombine})
	t.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })
	lines := make(chan peerLine, callers)
	linePeer(t, bR, bW, lines)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("call %d", i)
			if i%16 == 3 {
				text += "\u2028\u2029"
			}
			var got echoParams
			if errs[i] = c.Call(ctx, "echo", echoParams{Text: text}, &got); errs[i] == nil && got.Text != text {
				errs[i] = fmt.Errorf("answered %q", got.Text)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for range callers {
		l := <-lines
		if seen[string(l.ID)] {
			t.Fatalf("id %s written twice", l.ID)
		}
		seen[string(l.ID)] = true
		if strings.Contains(string(l.Params), "\u2028") || strings.Contains(string(l.Params), "\u2029") {
			t.Fatalf("a line went out with U+2028/9 raw: %s", l.Params)
		}
	}
	if n := obs.written.Load(); n != callers {
		t.Fatalf("the observer saw %d lines written, want %d", n, callers)
	}
	if n := out.writes.Load(); n != writes {
		t.Fatalf("%d calls at once took %d writes, want %d", callers, n, writes)
	}
}

// TestAQueuedCallFailsWhenTheWriteAheadOfItBlocks queues a call behind a
// write the peer never takes: when the write deadline passes, the
// connection ends and the queued call, whose line was never written, fails
// with the transport error instead of waiting for an answer.
func TestAQueuedCallFailsWhenTheWriteAheadOfItBlocks(t *testing.T) {
	aR, aW, bR, bW := pipePair(t)
	obs := newLineCounter(1)
	c := New(aR, aW, Options{Observer: obs, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })

	results := make(chan error, 2)
	go func() {
		big := strings.Repeat("x", 4<<20) // far more than a pipe holds
		results <- c.Call(context.Background(), "echo", echoParams{Text: big}, nil)
	}()
	select {
	case <-obs.reached:
	case <-time.After(time.Minute):
		t.Fatal("the first call's line was never framed")
	}
	go func() { results <- c.Call(context.Background(), "echo", echoParams{Text: "queued"}, nil) }()
	for i := range 2 {
		select {
		case err := <-results:
			if !errors.Is(err, protocol.ErrTransport) {
				t.Fatalf("call %d: %v, want the transport error", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a call behind a blocked write never returned")
		}
	}
	if n := obs.written.Load(); n != 2 {
		t.Fatalf("%d lines framed, want 2: the second call was not queued behind the blocked write", n)
	}
	if !c.Stalled() {
		t.Fatalf("the connection did not end stalled: %v", c.Err())
	}
}

// TestALineWhoseContextEndedIsNotQueued makes a call and a notification
// with an ended context while another call's write is in progress: neither
// is framed or written, and the write in progress goes out alone.
func TestALineWhoseContextEndedIsNotQueued(t *testing.T) {
	aR, aW, bR, bW := pipePair(t)
	obs := newLineCounter(1)
	open := make(chan struct{})
	out := &gatedWriter{w: aW, open: open}
	c := New(aR, out, Options{Observer: obs})
	t.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })
	lines := make(chan peerLine, 4)
	linePeer(t, bR, bW, lines)

	first := make(chan error, 1)
	go func() { first <- c.Call(context.Background(), "echo", echoParams{Text: "first"}, nil) }()
	select {
	case <-obs.reached:
	case <-time.After(time.Minute):
		t.Fatal("the first call's line was never framed")
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ended, "echo", echoParams{Text: "cancelled"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call with an ended context: %v", err)
	}
	if err := c.Notify(ended, "note", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a notification with an ended context: %v", err)
	}
	close(open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := c.Call(context.Background(), "echo", echoParams{Text: "after"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "after"} {
		l := <-lines
		if !strings.Contains(string(l.Params), want) {
			t.Fatalf("the peer read %s, want the %q call", l.Params, want)
		}
	}
	if n := obs.written.Load(); n != 2 {
		t.Fatalf("%d lines framed, want 2", n)
	}
	if n := out.writes.Load(); n != 2 {
		t.Fatalf("%d writes, want 2", n)
	}
}

// TestLinesQueuedPastTheBoundWaitForTheirWrite notifies in a loop while
// another notification's write is held: once the queue passes coalesceMax, the next
// notification waits for the write that takes it instead of queuing without
// bound, and every line goes out once the write is let go.
func TestLinesQueuedPastTheBoundWaitForTheirWrite(t *testing.T) {
	const notes, size = 12, 8 << 10
	aR, aW, bR, bW := pipePair(t)
	obs := newLineCounter(1)
	open := make(chan struct{})
	out := &gatedWriter{w: aW, open: open}
	c := New(aR, out, Options{Observer: obs})
	t.Cleanup(func() { c.Close(); bR.Close(); bW.Close() })
	release := sync.OnceFunc(func() { close(open) })
	t.Cleanup(release)
	lines := make(chan peerLine, notes+1)
	linePeer(t, bR, bW, lines)

	first := make(chan error, 1)
	go func() { first <- c.Notify(context.Background(), "note", nil) }()
	select {
	case <-obs.reached:
	case <-time.After(time.Minute):
		t.Fatal("the first notification was never framed")
	}
	done := make(chan error, 1)
	go func() {
		text := strings.Repeat("n", size)
		for range notes {
			if err := c.Notify(context.Background(), "note", echoParams{Text: text}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(time.Minute)
	for !waitingInWriteLine() {
		select {
		case err := <-done:
			t.Fatalf("%d notifications of %d bytes all returned while the first write was held (%v)", notes, size, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification ever waited for its write")
		}
		time.Sleep(time.Millisecond)
	}
	// Behind the first line, the lines queued up to the one that took the
	// queue past the bound, which waits.
	queued, line := int(obs.written.Load()-1), int(obs.last.Load())
	if queued*line <= coalesceMax || (queued-1)*line > coalesceMax {
		t.Fatalf("%d lines of %d bytes queued before one waited, over a bound of %d", queued, line, coalesceMax)
	}
	release()
	for _, ch := range []chan error{first, done} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	for range notes + 1 {
		if l := <-lines; l.Method != "note" {
			t.Fatalf("the peer read %q", l.Method)
		}
	}
}

// waitingInWriteLine reports whether a goroutine waits in writeLine for
// the write that takes its line.
func waitingInWriteLine() bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "sync.(*Cond).Wait") && strings.Contains(g, "jsonrpc.(*Conn).writeLine") {
			return true
		}
	}
	return false
}
