package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// The management API's connection limits. A client is a local process of
// the operator's, so each bound is generous for one that works and short
// for one that is stuck: none can hold a connection, a goroutine or a
// descriptor for long without being answered.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request, its body (at most
	// MaxBody bytes) included: a local client sends that in well under a
	// second, so a request not in by then is trickled, and is answered 408
	// and its connection closed. Once the request is in, the handler's own
	// bounds apply (a long poll's MaxWait, a call's).
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds writing one answer to a client that does not
	// read it.
	WriteTimeout = 30 * time.Second
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
	// DefaultMaxConns is how many connections the API keeps open at once
	// unless told otherwise (ServerOptions.MaxConns).
	DefaultMaxConns = 64
)

// ServerOptions configures a Server. Zero values mean the defaults.
type ServerOptions struct {
	// MaxConns bounds the connections open at once (default
	// DefaultMaxConns). At the bound a new connection takes the place of
	// the one that has waited longest with no request being answered on
	// it (idle, or still sending its request) and no answer still being
	// written to it; when there is none, the new one waits up to a second
	// for such a write to end, then is answered 503 overloaded and closed.
	MaxConns int
	// Logger gets what the HTTP server reports (default: discarded).
	Logger *slog.Logger
}

// Server serves the management API on a listener with the limits above.
type Server struct {
	http  *http.Server
	conns *connSet
}

// NewServer returns a server of d's API.
func NewServer(d Daemon, opts ServerOptions) *Server {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	set := &connSet{max: opts.MaxConns, open: map[net.Conn]*tracked{}, logger: opts.Logger}
	return &Server{conns: set, http: &http.Server{
		Handler:           Handler(d),
		ReadHeaderTimeout: ReadHeaderTimeout,
		// Lifted by the handler once the body is in.
		ReadTimeout:    ReadTimeout,
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: MaxHeaderBytes,
		ConnState:      set.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, answeringKey{}, func(on bool) { set.answering(c, on) })
		},
		ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}}
}

// Serve accepts connections on ln until Shutdown; it returns
// http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	return s.http.Serve(&limitListener{Listener: ln, set: s.conns})
}

// Shutdown stops accepting, closes the idle connections and waits, until
// ctx ends, for the answers in progress.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// answeringKey carries, in a request's context, the function that marks
// its connection as being answered, or no longer.
type answeringKey struct{}

// answering tells the connection set whether r's handler runs, so its
// connection is not the one a newcomer replaces while it does. The mark
// is taken off as the handler returns, before the client can have the
// whole answer, so a client that asks again at once finds it off; the
// server may still be writing the end of that answer then, and a
// connection with a write in progress is not replaced either (conn).
func answering(r *http.Request, on bool) {
	if f, ok := r.Context().Value(answeringKey{}).(func(bool)); ok {
		f(on)
	}
}

// connSet is the API's open connections.
type connSet struct {
	max    int
	logger *slog.Logger

	mu   sync.Mutex
	open map[net.Conn]*tracked
	// full is set while the set is at its bound, so reaching it is logged
	// once, not once a connection.
	full bool
	// wrote, while a newcomer waits for an answer's write to end, is
	// closed when one does; waiting is set while a newcomer looks or
	// waits, so a write takes the lock only then.
	wrote   chan struct{}
	waiting atomic.Bool
}

// tracked is one open connection: since when it is in its state, and
// whether a handler is answering it.
type tracked struct {
	conn      *conn
	since     time.Time
	answering bool
}

// conn is an accepted connection that counts the writes in progress on
// it: a handler that has returned can leave the end of its answer to the
// server's last flush, which waits for a client that reads slowly, and a
// connection replaced then would cut that answer.
type conn struct {
	net.Conn
	set     *connSet
	writing atomic.Int32
}

// Write implements net.Conn.
func (c *conn) Write(b []byte) (int, error) {
	c.writing.Add(1)
	defer func() {
		if c.writing.Add(-1) == 0 {
			c.set.written()
		}
	}()
	return c.Conn.Write(b)
}

// CloseWrite shuts the connection's writing side, as the HTTP server asks
// of the connections it closes gracefully.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// admitWait is how long a newcomer at the bound waits for a connection to
// finish writing an answer its handler has returned, when no connection is
// free to replace and one is finishing so. A client that has read its answer
// may ask again before the server has counted the write done; a client
// that reads slowly holds the write up to WriteTimeout, and the newcomer is
// refused after this wait.
const admitWait = time.Second

// admit makes room for c, replacing the connection that has waited longest
// with nothing being answered or written; when there is none but an
// answer's last write is under way, it waits for that write for up to
// admitWait. It reports false when there is no room.
func (s *connSet) admit(c *conn) bool {
	deadline := time.Now().Add(admitWait)
	for {
		admitted, wait := s.tryAdmit(c)
		remaining := time.Until(deadline)
		if admitted || wait == nil || remaining <= 0 {
			return admitted
		}
		t := time.NewTimer(remaining)
		select {
		case <-wait:
		case <-t.C:
		}
		t.Stop()
	}
}

// tryAdmit admits c as admit does, without waiting; when it cannot, wait is
// closed at the end of the next write on a connection not being answered,
// or nil when there is none to wait for.
func (s *connSet) tryAdmit(c *conn) (admitted bool, wait <-chan struct{}) {
	s.mu.Lock()
	var victim net.Conn
	writing := false
	if len(s.open) >= s.max {
		// Before the writes are looked at, so one that ends after its
		// look takes the lock in written and finds wrote.
		s.waiting.Store(true)
		var oldest time.Time
		for oc, t := range s.open {
			switch {
			case t.answering:
			case t.conn.writing.Load() > 0:
				writing = true
			case victim == nil || t.since.Before(oldest):
				victim, oldest = oc, t.since
			}
		}
		if !s.full {
			s.full = true
			s.logger.Warn("management API at its connection limit; each new connection replaces the one waiting longest with no request answered", "limit", s.max)
		}
	} else if len(s.open) < s.max/2 {
		s.full = false
	}
	admitted = len(s.open) < s.max || victim != nil
	if victim != nil {
		delete(s.open, victim)
	}
	if admitted {
		s.open[c] = &tracked{conn: c, since: time.Now()}
	} else if writing {
		if s.wrote == nil {
			s.wrote = make(chan struct{})
		}
		wait = s.wrote
	}
	if s.wrote == nil {
		s.waiting.Store(false)
	}
	s.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	return admitted, wait
}

// written wakes a newcomer waiting for a connection's write to end.
func (s *connSet) written() {
	if !s.waiting.Load() {
		return
	}
	s.mu.Lock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
		s.waiting.Store(false)
	}
	s.mu.Unlock()
}

// track follows the HTTP server's view of each connection.
func (s *connSet) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.open[c]
	if !ok {
		return
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(s.open, c)
	case http.StateActive:
		// A request begins: it is read before it is answered.
		t.since, t.answering = time.Now(), false
	}
}

// answering marks c's request as read and being answered, or answered.
func (s *connSet) answering(c net.Conn, on bool) {
	s.mu.Lock()
	if t, ok := s.open[c]; ok {
		t.since, t.answering = time.Now(), on
	}
	s.mu.Unlock()
}

// limitListener admits each accepted connection into the set, and refuses
// one there is no room for.
type limitListener struct {
	net.Listener
	set *connSet
}

// Accept returns the next connection there is room for.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, set: l.set}
		if l.set.admit(c) {
			return c, nil
		}
		refuse(nc)
	}
}

// refuse answers a connection there is no room for, 503 with the API's
// error shape, and closes it. The answer is small enough for a fresh
// socket's buffer, so the write does not wait for the client.
func refuse(c net.Conn) {
	body, _ := json.Marshal(client.Error{Code: protocol.CodeOverloaded,
		Message: "the management API is answering as many requests as it takes at once; try again when some have finished"})
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"+
		"Retry-After: 1\r\nContent-Length: "+strconv.Itoa(len(body)+1)+"\r\n\r\n"+string(body)+"\n")
	_ = c.Close()
}
