package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// held is a Daemon whose status answers at once and whose events wait
// until release is closed, so a test can keep handlers running.
type held struct {
	Daemon
	release chan struct{}
	waiting chan struct{}
}

func (h *held) Status() client.Status { return client.Status{Phase: client.PhaseRunning} }

func (h *held) Events(context.Context, client.EventsQuery) (client.Events, error) {
	h.waiting <- struct{}{}
	<-h.release
	return client.Events{}, nil
}

// serve runs a Server of d on a real socket and returns its path.
func serve(t *testing.T, d Daemon, maxConns int) (string, *Server) {
	t.Helper()
	return serveWith(t, d, maxConns, nil, nil)
}

// serveWith is serve with the socket's listener and the API's handler
// wrapped, each unless nil, before it serves.
func serveWith(t *testing.T, d Daemon, maxConns int, listener func(net.Listener) net.Listener, handler func(http.Handler) http.Handler) (string, *Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if listener != nil {
		ln = listener(ln)
	}
	s := NewServer(d, ServerOptions{MaxConns: maxConns})
	if handler != nil {
		s.http.Handler = handler(s.http.Handler)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return path, s
}

// get sends one GET on a new connection and returns the connection, kept
// alive, and the answer's status and error shape.
func get(t *testing.T, path, target string) (net.Conn, int, client.Error) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: oc\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, 0, client.Error{Message: err.Error()}
	}
	data, _ := io.ReadAll(resp.Body)
	var e client.Error
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(data, &e)
	}
	return c, resp.StatusCode, e
}

// ask sends one GET on a new connection, closes it, and returns the
// answer's status and error shape.
func ask(t *testing.T, path, target string) (int, client.Error) {
	t.Helper()
	c, status, e := get(t, path, target)
	if c != nil {
		c.Close()
	}
	return status, e
}

// TestConnectionsOverTheBoundReplaceIdleOnes: idle kept-alive connections
// past the bound do not keep a newcomer out: each new one replaces the
// longest idle. Only when every connection is being answered is a
// newcomer refused, with 503 overloaded in the API's error shape.
func TestConnectionsOverTheBoundReplaceIdleOnes(t *testing.T) {
	const bound = 4
	h := &held{release: make(chan struct{}), waiting: make(chan struct{}, bound)}
	path, s := serve(t, h, bound)
	var idle []net.Conn
	for range 3 * bound {
		c, status, e := get(t, path, "/v1/status")
		if status != http.StatusOK {
			t.Fatalf("status with idle connections open: %d %+v", status, e)
		}
		idle = append(idle, c)
	}
	s.conns.mu.Lock()
	open := len(s.conns.open)
	s.conns.mu.Unlock()
	if open > bound {
		t.Errorf("%d connections open, over the bound %d", open, bound)
	}
	// The server closed the idle ones it replaced: a request on one of
	// those fails, on one still open it is answered.
	answered := 0
	for _, c := range idle {
		fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: oc\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == http.StatusOK {
			answered++
		}
		c.Close()
	}
	if answered > bound || answered == 0 {
		t.Errorf("%d of the %d idle connections still answered; want at most the bound, %d, and some", answered, len(idle), bound)
	}

	// Every slot answering a long poll: a newcomer is refused.
	var polls sync.WaitGroup
	for range bound {
		polls.Add(1)
		go func() {
			defer polls.Done()
			status, e := ask(t, path, "/v1/events?wait=30")
			if status != http.StatusOK {
				t.Errorf("a long poll: %d %+v", status, e)
				h.waiting <- struct{}{}
			}
		}()
		<-h.waiting
	}
	status, e := ask(t, path, "/v1/status")
	if status != http.StatusServiceUnavailable || e.Code != protocol.CodeOverloaded || !strings.Contains(e.Message, "try again") {
		t.Errorf("a newcomer with every slot answering: %d %+v", status, e)
	}
	close(h.release)
	// Negative control: once the answers are done, a newcomer is served.
	// Done means read by their clients: a connection whose handler has
	// returned is one a newcomer may replace, and one replaced before its
	// client read the answer would fail that long poll.
	polls.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _ := ask(t, path, "/v1/status")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after the long polls ended: %d", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldWrites is a listener whose connections hold each write of an answer
// marked X-Held until hold is closed, as a client that reads slowly holds
// the server's last flush of an answer once the socket is full. The server
// writes a small answer in one write after its handler has returned.
type heldWrites struct {
	net.Listener
	hold, held chan struct{}
}

func (l heldWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return heldConn{Conn: c, l: l}, nil
}

type heldConn struct {
	net.Conn
	l heldWrites
}

func (c heldConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("X-Held: 1")) {
		c.l.held <- struct{}{}
		<-c.l.hold
	}
	return c.Conn.Write(b)
}

// TestAnswerStillBeingWrittenIsNotReplaced: a connection whose handler has
// returned but whose answer the server is still writing is not the one a
// newcomer at the bound replaces. With every connection so, the newcomer
// waits for a write to end: it is served when one does within the wait,
// refused 503 overloaded when none does; every held answer reaches its
// client whole either way.
func TestAnswerStillBeingWrittenIsNotReplaced(t *testing.T) {
	for _, endsInTime := range []bool{true, false} {
		name := map[bool]string{true: "a write ends while the newcomer waits", false: "no write ends within the wait"}[endsInTime]
		t.Run(name, func(t *testing.T) {
			const bound = 3
			l := heldWrites{hold: make(chan struct{}), held: make(chan struct{}, bound)}
			path, s := serveWith(t, &held{}, bound, func(ln net.Listener) net.Listener {
				l.Listener = ln
				return l
			}, func(api http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Query().Get("held") != "" {
						w.Header().Set("X-Held", "1")
					}
					api.ServeHTTP(w, r)
				})
			})
			var answers sync.WaitGroup
			for range bound {
				answers.Add(1)
				go func() {
					defer answers.Done()
					status, e := ask(t, path, "/v1/status?held=1")
					if status != http.StatusOK {
						t.Errorf("an answer held in its last write: %d %+v", status, e)
					}
				}()
				<-l.held
			}
			newcomer := make(chan int, 1)
			go func() {
				status, e := ask(t, path, "/v1/status")
				if status != http.StatusOK && e.Code != protocol.CodeOverloaded {
					t.Errorf("the newcomer: %d %+v", status, e)
				}
				newcomer <- status
			}()
			if endsInTime {
				deadline := time.Now().Add(30 * time.Second)
				for !s.conns.waiting.Load() {
					if time.Now().After(deadline) {
						t.Fatal("the newcomer never waited for a write")
					}
					time.Sleep(time.Millisecond)
				}
				close(l.hold)
				if status := <-newcomer; status != http.StatusOK {
					t.Errorf("the newcomer, after a write it waited for ended: %d", status)
				}
			} else {
				if status := <-newcomer; status != http.StatusServiceUnavailable {
					t.Errorf("the newcomer, with every answer still being written: %d", status)
				}
				close(l.hold)
			}
			answers.Wait()
		})
	}
}
