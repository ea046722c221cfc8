// Package toolbelt is the host's toolbelt: the HTTP/1.1 API on a Unix
// socket in the state directory through which a program an executor runs
// calls operations as its execution. A call carries the execution's bearer
// token; the engine resolves it (by its hash) to the running execution, so
// a token dies with its execution or its lease. The operation must be
// granted by the binding the Work runs under. Builtins (read_context, wait,
// declare_outcome) are answered by the engine; a handler operation is
// operation.call on its package with the Authority the toolbelt builds
// (never the caller), run outside any transaction, and its result is
// committed under the call's request ID so a retry replays it; a wait
// operation is operation.wait, whose plan becomes the Work's Wait owned by
// its package; an emit operation is operation.emit, whose Event the engine
// accepts (with the package's emit.commit records) in the transaction that
// commits the call's replay record.
//
// It holds no state of its own beyond the replay records it writes, and
// imports neither the daemon nor the session: what it needs of them is the
// small interfaces below.
package toolbelt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// SocketName is the toolbelt socket's name in the state directory.
const SocketName = "toolbelt.sock"

// Limits of the toolbelt's connections. A caller is a local program, so
// each bound is generous for one that works and short for one that is
// stuck.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request (at most 1 MiB).
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds writing one answer to a caller that does not
	// read it.
	WriteTimeout = 30 * time.Second
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout = 60 * time.Second
	// MaxConns bounds the connections open at once; more wait to be
	// accepted.
	MaxConns = 128
	// DefaultCallTimeout bounds an operation's call to its package.
	DefaultCallTimeout = 5 * time.Minute
)

// Engine is what the toolbelt needs of the engine: the execution behind a
// token, and the builtins.
type Engine interface {
	// ExecutionByToken is the running execution whose current token is
	// token; any other token is protocol.ErrUnauthorized.
	ExecutionByToken(token string) (pebblekv.Execution, error)
	ReadContext(x pebblekv.Execution) (engine.ToolContext, error)
	DeclareWait(ctx context.Context, x pebblekv.Execution, owner string, p protocol.WaitPlan) (pebblekv.Wait, error)
	DeclareOutcome(ctx context.Context, x pebblekv.Execution, state, reason string) error
}

// Packages is what the toolbelt needs of the packages: who declares an
// operation, and a call to a package's running process.
type Packages interface {
	// OperationOwner names the package declaring operation name, with its
	// declaration ("" for none).
	OperationOwner(name string) (pkg string, op protocol.Operation)
	// Call calls method on pkg's running process; a package that is not
	// running answers protocol.ErrUnavailable.
	Call(ctx context.Context, pkg, method string, params, result any) error
}

// Grant is what a binding grants the executions of its Work.
type Grant struct {
	// Operations are the operations (builtins included) it may call.
	Operations []string
	// Connection is the connection an operation's authority carries.
	Connection string
	// Toolbelt is the binding's toolbelt label; "none" grants no call.
	Toolbelt string
}

// Deps are the toolbelt's collaborators.
type Deps struct {
	Engine   Engine
	Packages Packages
	// Grant is the live configuration's grant of binding in scope; false
	// when the scope or the binding is no longer configured.
	Grant func(scope, binding string) (Grant, bool)
	// DB keeps the handler results a retry replays.
	DB *pebblekv.DB
	// Logger gets what the toolbelt reports (default: discarded).
	Logger *slog.Logger
	// CallTimeout bounds an operation's call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// GateTimeout bounds one operation gate's answer (default
	// DefaultGateTimeout).
	GateTimeout time.Duration
	// Now is the clock of the replay records (default time.Now).
	Now func() time.Time
}

// Server is the toolbelt, serving on one listener.
type Server struct {
	deps Deps
	http *http.Server
	// keys serializes calls with the same replay key, so a retry that
	// arrives while the first call runs waits for its result instead of
	// calling the handler again.
	keys keyLocks
}

// New returns a toolbelt over deps; Serve starts it.
func New(deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.CallTimeout <= 0 {
		deps.CallTimeout = DefaultCallTimeout
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.GateTimeout <= 0 {
		deps.GateTimeout = DefaultGateTimeout
	}
	s := &Server{deps: deps, keys: keyLocks{m: map[string]*keyLock{}}}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(deps.Logger.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve serves the toolbelt on ln until Shutdown; it returns
// http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	return s.http.Serve(&limitListener{Listener: ln, sem: make(chan struct{}, MaxConns)})
}

// Shutdown stops taking calls and waits, until ctx ends, for the calls
// being answered; the listener's socket file is removed.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Listen listens on the Unix socket path, owner-only: the socket is 0600,
// in a directory (made 0700 when missing) that must be this user's and
// writable by no one else, or another user could have planted what is
// there. A socket file already there is removed only when it is this
// user's and nothing answers on it (a dead daemon's); one that answers,
// another user's, or a file that is not a socket refuses the listen.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := ownDir(dir); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// ownDir refuses a directory another user owns or may write to.
func ownDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s, where the toolbelt's socket goes, is not a directory", dir)
	case ownerOf(fi) != os.Getuid():
		return fmt.Errorf("%s, where the toolbelt's socket goes, is owned by user %d, not by you (user %d): use a state directory of your own", dir, ownerOf(fi), os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s, where the toolbelt's socket goes, can be written by its group or others (mode %04o): run 'chmod go-w %s'", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// ownerOf is the user owning fi's file (-1 when the system does not say).
func ownerOf(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// removeStale removes a socket file of this user's that nothing answers
// on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().Type() != os.ModeSocket:
		return fmt.Errorf("%s is in the way of the toolbelt's socket and is not a socket: move it away", path)
	case ownerOf(fi) != os.Getuid():
		return fmt.Errorf("%s is a socket of user %d, not yours: another user may be answering in the toolbelt's place; have it removed", path, ownerOf(fi))
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("something already serves the toolbelt at %s: stop the daemon using it first", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checking the toolbelt socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// limitListener holds at most cap(sem) connections open: Accept waits for
// a place.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// keyLocks are locks by replay key, dropped when nobody holds or waits.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock takes key's lock and returns its release.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
