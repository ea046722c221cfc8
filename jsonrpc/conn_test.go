package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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

// pipePair returns two connected ends made of real OS pipes: a reads what b
// writes and the reverse.
func pipePair(t testing.TB) (aR, aW, bR, bW *os.File) {
	t.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r1, w2, r2, w1
}

// connPair starts two Conns over real pipes.
func connPair(t testing.TB, aOpts, bOpts Options) (a, b *Conn) {
	t.Helper()
	aR, aW, bR, bW := pipePair(t)
	if aOpts.Peer == "" {
		aOpts.Peer = "b"
	}
	if bOpts.Peer == "" {
		bOpts.Peer = "a"
	}
	a = New(aR, aW, aOpts)
	b = New(bR, bW, bOpts)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

type echoParams struct {
	Text string `json:"text"`
}

func echoTable() *Table {
	t := NewTable()
	Handle(t, "echo", func(ctx context.Context, p echoParams) (echoParams, error) { return p, nil })
	return t
}

// waitTable serves "wait", which returns once its context ends, telling
// entered when it starts and cancelled when its context ended.
func waitTable(entered, cancelled chan struct{}) *Table {
	tbl := echoTable()
	Handle(tbl, "wait", func(ctx context.Context, _ struct{}) (struct{}, error) {
		entered <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return struct{}{}, nil
	})
	return tbl
}

func TestCallEchoRoundTrip(t *testing.T) {
	a, _ := connPair(t, Options{}, Options{Handlers: echoTable()})
	var out echoParams
	if err := a.Call(context.Background(), "echo", echoParams{Text: "hi"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Text != "hi" {
		t.Fatalf("got %q", out.Text)
	}
}

func TestUnknownMethodIsMethodNotFound(t *testing.T) {
	a, _ := connPair(t, Options{}, Options{Handlers: echoTable()})
	err := a.Call(context.Background(), "nope", nil, nil)
	if !errors.Is(err, protocol.ErrMethodNotFound) {
		t.Fatalf("got %v", err)
	}
	// The connection stays usable.
	if err := a.Call(context.Background(), "echo", echoParams{Text: "x"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestAuthoredErrorCrossesVerbatimUnauthoredAsInternal(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	tbl := NewTable()
	Handle(tbl, "authored", func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, fmt.Errorf("lookup: %w", protocol.Errorf(protocol.ErrConflict, "key %q changed", "k"))
	})
	Handle(tbl, "custom", func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, &protocol.Error{Code: "unknown_city", Message: "no forecast for atlantis"}
	})
	Handle(tbl, "unauthored", func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, errors.New("dial tcp 10.0.0.1: secret detail")
	})
	a, _ := connPair(t, Options{}, Options{Handlers: tbl, Logger: testLogger(&logged, &mu)})

	err := a.Call(context.Background(), "authored", nil, nil)
	if !errors.Is(err, protocol.ErrConflict) || err.Error() != `lookup: key "k" changed` {
		t.Fatalf("authored: %v", err)
	}
	err = a.Call(context.Background(), "custom", nil, nil)
	if protocol.CodeOf(err) != "unknown_city" || err.Error() != "no forecast for atlantis" {
		t.Fatalf("custom: %v", err)
	}
	err = a.Call(context.Background(), "unauthored", nil, nil)
	if !errors.Is(err, protocol.ErrInternal) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unauthored must cross as internal without detail: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "secret detail") {
		t.Fatalf("the detail must stay in the serving side's log; log: %s", logged.String())
	}
}

func TestPanickingHandlerAnswersInternalAndConnectionSurvives(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	tbl := echoTable()
	Handle(tbl, "boom", func(ctx context.Context, _ struct{}) (struct{}, error) { panic("kaboom") })
	a, _ := connPair(t, Options{}, Options{Handlers: tbl, Logger: testLogger(&logged, &mu)})
	if err := a.Call(context.Background(), "boom", nil, nil); !errors.Is(err, protocol.ErrInternal) {
		t.Fatalf("got %v", err)
	}
	if err := a.Call(context.Background(), "echo", echoParams{Text: "after"}, nil); err != nil {
		t.Fatalf("connection did not survive the panic: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "kaboom") || !strings.Contains(logged.String(), "conn_test.go") {
		t.Fatalf("panic and stack must be logged; log: %s", logged.String())
	}
}

func TestNestedCallbacksWhileServing(t *testing.T) {
	aTbl := NewTable()
	var served atomic.Int32
	Handle(aTbl, "inc", func(ctx context.Context, _ struct{}) (int32, error) { return served.Add(1), nil })
	bTbl := NewTable()
	Handle(bTbl, "loop", func(ctx context.Context, n int) (int, error) {
		peer := FromContext(ctx)
		for i := 0; i < n; i++ {
			if err := peer.Call(ctx, "inc", nil, nil); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	// b → a → b: a's handler calls b, whose handler calls a back.
	Handle(aTbl, "outer", func(ctx context.Context, n int) (int, error) {
		var got int
		err := FromContext(ctx).Call(ctx, "loop", n, &got)
		return got, err
	})
	a, b := connPair(t, Options{Handlers: aTbl}, Options{Handlers: bTbl})
	var got int
	if err := b.Call(context.Background(), "outer", 500, &got); err != nil {
		t.Fatal(err)
	}
	if got != 500 || served.Load() != 500 {
		t.Fatalf("got %d, served %d", got, served.Load())
	}
	_ = a
}

// TestDerivedContextsInHandlersAreSafe is the regression test for the
// library's recycled request contexts: deriving a context in a handler that
// has not been released crashes the process, so every handler here derives
// one, many times over, concurrently. Run under -race.
func TestDerivedContextsInHandlersAreSafe(t *testing.T) {
	tbl := NewTable()
	Handle(tbl, "derive", func(ctx context.Context, _ struct{}) (bool, error) {
		c1, cancel1 := context.WithTimeout(ctx, time.Minute)
		defer cancel1()
		c2, cancel2 := context.WithCancel(c1)
		cancel2()
		<-c2.Done()
		return c1.Err() == nil, nil
	})
	a, _ := connPair(t, Options{}, Options{Handlers: tbl})
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				var ok bool
				if err := a.Call(context.Background(), "derive", nil, &ok); err != nil || !ok {
					t.Errorf("derive: %v %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestOverloadAnsweredAtOnceWithoutPausingReader(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	tbl := echoTable()
	Handle(tbl, "block", func(ctx context.Context, _ struct{}) (struct{}, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return struct{}{}, nil
	})
	a, b := connPair(t, Options{}, Options{Handlers: tbl})
	errs := make(chan error, protocol.MaxInflight)
	for i := 0; i < protocol.MaxInflight; i++ {
		go func() { errs <- a.Call(context.Background(), "block", nil, nil) }()
	}
	waitFor(t, func() bool { return started.Load() == protocol.MaxInflight })
	if b.Inflight() != protocol.MaxInflight {
		t.Fatalf("inflight %d", b.Inflight())
	}
	// The 65th call is refused at once.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := a.Call(ctx, "echo", echoParams{}, nil)
	if !errors.Is(err, protocol.ErrOverloaded) {
		t.Fatalf("65th call: %v", err)
	}
	// The reader is not paused: b can still call a (responses flow).
	aTbl := echoTable()
	_ = aTbl
	if err := b.Call(ctx, "echo", echoParams{}, nil); !errors.Is(err, protocol.ErrMethodNotFound) {
		t.Fatalf("reverse call while overloaded: %v", err)
	}
	close(release)
	for i := 0; i < protocol.MaxInflight; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Negative control: once drained, the same call succeeds.
	if err := a.Call(context.Background(), "echo", echoParams{}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCancelReachesHandlerAndCallerReturnsAtOnce(t *testing.T) {
	seen := make(chan error, 1)
	entered := make(chan struct{})
	tbl := NewTable()
	Handle(tbl, "wait", func(ctx context.Context, _ struct{}) (struct{}, error) {
		close(entered)
		<-ctx.Done()
		seen <- ctx.Err()
		return struct{}{}, nil
	})
	a, _ := connPair(t, Options{}, Options{Handlers: tbl})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	start := time.Now()
	err := a.Call(ctx, "wait", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("caller: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("caller returned after %s", d)
	}
	select {
	case herr := <-seen:
		if !errors.Is(herr, context.Canceled) {
			t.Fatalf("handler saw %v", herr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was never cancelled")
	}
}

func TestCancelledHandlerAnswersMinus32800(t *testing.T) {
	entered := make(chan struct{})
	tbl := NewTable()
	Handle(tbl, "wait", func(ctx context.Context, _ struct{}) (struct{}, error) {
		close(entered)
		<-ctx.Done()
		return struct{}{}, nil
	})
	peer := rawPeer(t, Options{Handlers: tbl})
	peer.send(`{"jsonrpc":"2.0","id":7,"method":"wait"}`)
	<-entered
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":7}}`)
	line := peer.recv()
	if !strings.Contains(line, `"id":7`) || !strings.Contains(line, `-32800`) || !strings.Contains(line, `"code":"cancelled"`) {
		t.Fatalf("answer: %s", line)
	}
}

func TestCancelFindsNumberAndStringIDsApart(t *testing.T) {
	entered := make(chan struct{}, 2)
	tbl := NewTable()
	Handle(tbl, "wait", func(ctx context.Context, _ struct{}) (struct{}, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return struct{}{}, nil
	})
	peer := rawPeer(t, Options{Handlers: tbl})
	peer.send(`{"jsonrpc":"2.0","id":7,"method":"wait"}`)
	<-entered
	peer.send(`{"jsonrpc":"2.0","id":"s7","method":"wait"}`)
	<-entered
	// Neither a string "7" nor a number for "s7" names a call in flight:
	// the cancel after them, for 7, is the first answer to come.
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":"7"}}`)
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":7}}`)
	if line := peer.recv(); !strings.Contains(line, `"id":7,`) || !strings.Contains(line, `-32800`) {
		t.Fatalf("first answer: %s", line)
	}
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":"s7"}}`)
	if line := peer.recv(); !strings.Contains(line, `"id":"s7"`) || !strings.Contains(line, `-32800`) {
		t.Fatalf("second answer: %s", line)
	}
}

func TestLineSeparatorsEscapedAndRawNewlinesFlattened(t *testing.T) {
	tbl := NewTable()
	Handle(tbl, "text", func(ctx context.Context, _ struct{}) (jsontext.Value, error) {
		return jsontext.Value("{\n  \"s\": \"a\u2028b\u2029c\"\n}"), nil
	})
	peer := rawPeer(t, Options{Handlers: tbl})
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"text"}`)
	line := peer.recv()
	if strings.ContainsRune(line, '\u2028') || strings.ContainsRune(line, '\u2029') {
		t.Fatalf("raw separators on the wire: %q", line)
	}
	if !strings.Contains(line, `a\u2028b\u2029c`) {
		t.Fatalf("separators not escaped: %q", line)
	}
	var resp struct {
		Result struct{ S string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &resp, json.MatchCaseInsensitiveNames(true)); err != nil || resp.Result.S != "a\u2028b\u2029c" {
		t.Fatalf("decoded %q: %v", resp.Result.S, err)
	}
}

func TestOversizedLineClosesConnectionWithReason(t *testing.T) {
	peer := rawPeer(t, Options{MaxMessageBytes: 1 << 20})
	big := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 1<<20) + `"}`
	go peer.w.Write([]byte(big + "\n"))
	select {
	case <-peer.conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection stayed open")
	}
	err := peer.conn.Err()
	if !errors.Is(err, protocol.ErrTransport) || !strings.Contains(err.Error(), "size bound") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("reason: %v", err)
	}
}

func TestAtTheBoundIsAccepted(t *testing.T) {
	a, _ := connPair(t, Options{}, Options{Handlers: echoTable(), MaxMessageBytes: 1 << 20})
	text := strings.Repeat("a", (1<<20)-200)
	var out echoParams
	if err := a.Call(context.Background(), "echo", echoParams{Text: text}, &out); err != nil || len(out.Text) != len(text) {
		t.Fatalf("a message under the bound: %v", err)
	}
}

func TestNonJSONLineEndsConnectionAndSaysWhy(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	peer := rawPeer(t, Options{Logger: testLogger(&logged, &mu)})
	peer.send("hello from a stray print")
	select {
	case <-peer.conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection stayed open")
	}
	err := peer.conn.Err()
	if !errors.Is(err, protocol.ErrTransport) || !strings.Contains(err.Error(), "hello from a stray print") {
		t.Fatalf("reason: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "not a JSON-RPC message") {
		t.Fatalf("the reason must be logged: %s", logged.String())
	}
}

func TestPeerGoneFailsPendingCallsAsTransport(t *testing.T) {
	tbl := NewTable()
	entered := make(chan struct{})
	Handle(tbl, "hang", func(ctx context.Context, _ struct{}) (struct{}, error) {
		close(entered)
		<-ctx.Done()
		return struct{}{}, nil
	})
	aR, aW, bR, bW := pipePair(t)
	a := New(aR, aW, Options{Peer: "b"})
	defer a.Close()
	b := New(bR, bW, Options{Handlers: tbl})
	errc := make(chan error, 1)
	go func() { errc <- a.Call(context.Background(), "hang", nil, nil) }()
	<-entered
	bW.Close() // b's side of the stream goes away, as a crashed process's does
	select {
	case err := <-errc:
		if !errors.Is(err, protocol.ErrTransport) {
			t.Fatalf("pending call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending call hung")
	}
	if err := a.Call(context.Background(), "hang", nil, nil); !errors.Is(err, protocol.ErrTransport) {
		t.Fatalf("later call: %v", err)
	}
	b.Close()
}

func TestBlockedWriteHasADeadline(t *testing.T) {
	// The peer never reads: the pipe fills, and the write must fail within
	// the write timeout instead of hanging the caller.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inR, inW, _ := os.Pipe()
	defer inW.Close()
	c := New(inR, w, Options{WriteTimeout: 200 * time.Millisecond})
	defer c.Close()
	start := time.Now()
	err = c.Call(context.Background(), "echo", echoParams{Text: strings.Repeat("x", 4<<20)}, nil)
	if !errors.Is(err, protocol.ErrTransport) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("write blocked %s", d)
	}
}

func TestCallTimeoutBoundsCallsWithoutDeadline(t *testing.T) {
	tbl := NewTable()
	Handle(tbl, "hang", func(ctx context.Context, _ struct{}) (struct{}, error) {
		<-ctx.Done()
		return struct{}{}, nil
	})
	a, _ := connPair(t, Options{CallTimeout: 100 * time.Millisecond}, Options{Handlers: tbl})
	err := a.Call(context.Background(), "hang", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

// One timer keeps CallTimeout for all calls: a call made after another
// expires in its own turn (the timer re-arms for it), and the peer is told
// to stop serving each.
func TestCallTimeoutEndsEachCallInTurn(t *testing.T) {
	started, stopped := make(chan struct{}, 2), make(chan struct{}, 2)
	a, _ := connPair(t, Options{CallTimeout: 150 * time.Millisecond}, Options{Handlers: waitTable(started, stopped)})
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		if i > 0 {
			// Not a wait for an event: the second call's deadline must fall
			// well after the first's, so the timer has to re-arm for it.
			time.Sleep(75 * time.Millisecond)
		}
		go func() { errs <- a.Call(context.Background(), "wait", nil, nil) }()
		<-started
	}
	deadline := time.After(60 * time.Second)
	for i := 0; i < 2; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call %d: got %v", i, err)
			}
		case <-deadline:
			t.Fatalf("%d of 2 calls outlived their CallTimeout", 2-i)
		}
	}
	for i := 0; i < 2; i++ {
		select {
		case <-stopped:
		case <-deadline:
			t.Fatalf("%d of 2 handlers were never told to stop", 2-i)
		}
	}
}

func TestInvalidParamsNameTheField(t *testing.T) {
	a, _ := connPair(t, Options{}, Options{Handlers: echoTable()})
	err := a.Call(context.Background(), "echo", map[string]any{"text": 5}, nil)
	if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "/text") {
		t.Fatalf("got %v", err)
	}
}

// raw is a hand-driven peer: lines in, lines out.
type raw struct {
	t    testing.TB
	conn *Conn
	w    *os.File
	r    *bufio.Reader
}

func rawPeer(t testing.TB, opts Options) *raw {
	aR, aW, bR, bW := pipePair(t)
	c := New(aR, aW, opts)
	t.Cleanup(func() { c.Close(); bW.Close(); bR.Close() })
	return &raw{t: t, conn: c, w: bW, r: bufio.NewReaderSize(bR, 1<<20)}
}

func (p *raw) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *raw) recv() string {
	p.t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() { s, err := p.r.ReadString('\n'); ch <- res{s, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatal(r.err)
		}
		return strings.TrimSuffix(r.s, "\n")
	case <-time.After(5 * time.Second):
		p.t.Fatal("no answer")
	}
	return ""
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCloseDuringReleasesEndsTheConnection: with handlers calling the peer
// back (each call passes the reader role on) while this side closes, the
// connection still ends: Done closes and the reason is recorded, whatever
// the moment of the close against the hand-overs. The end is run by
// whoever holds the reader role when reading ends, so a role lost in a
// hand-over would leave Done open forever.
func TestCloseDuringReleasesEndsTheConnection(t *testing.T) {
	for i := range 200 {
		table := NewTable()
		var b *Conn
		table.HandleRaw("callback", func(ctx context.Context, _ jsontext.Value) (any, error) {
			_ = b.Call(ctx, "echo", echoParams{Text: "x"}, nil)
			return nil, nil
		})
		a, b0 := connPair(t, Options{Handlers: echoTable()}, Options{Handlers: table})
		b = b0
		for range 4 {
			go func() { _ = a.Call(context.Background(), "callback", nil, nil) }()
		}
		if i%2 == 0 {
			runtime.Gosched()
		}
		_ = b.Close()
		select {
		case <-b.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("iteration %d: Close returned and Done never closed", i)
		}
		if b.Err() != nil {
			t.Fatalf("iteration %d: this side's close recorded %v", i, b.Err())
		}
	}
}
