package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// State is where a session's process is in its life.
type State string

// States.
const (
	// StateStarting: the first process is being started and handshaken.
	StateStarting State = "starting"
	// StateRunning: the handshake is done and calls are served.
	StateRunning State = "running"
	// StateRestarting: the process crashed; a new one starts after a backoff.
	StateRestarting State = "restarting"
	// StateRefused: a deterministic refusal (no common version, a manifest
	// that differs from the file); it is never restarted.
	StateRefused State = "refused"
	// StateStopped: Close finished.
	StateStopped State = "stopped"
)

// Package is what the host knows of an extension before it starts it.
type Package struct {
	// Dir is the package directory; the command runs there.
	Dir string
	// Manifest is the validated manifest from the file.
	Manifest *protocol.Manifest
}

// Backoff is the restart policy after a crash.
type Backoff struct {
	// Min is the first wait (default 100 ms); each crash doubles it.
	Min time.Duration
	// Max caps the wait (default 30 s).
	Max time.Duration
	// ResetAfter is the uptime after which the wait starts again at Min
	// (default one minute).
	ResetAfter time.Duration
}

// Options configures a session. Zero values mean the defaults.
type Options struct {
	// StateDir is the extension's private state directory, sent in
	// initialize and created if missing.
	StateDir string
	// LogPath is the bounded stderr log; "" keeps only the last lines.
	LogPath string
	// LogLimit bounds the log file (default 1 MiB).
	LogLimit int64
	// PassEnv are the daemon variables the operator grants this package.
	PassEnv []string
	// Environ is the daemon's environment (default os.Environ()).
	Environ []string
	// Self is the executable a host-run command runs (default the current
	// executable).
	Self string
	// Host serves the extension's calls to the host (E→H). Catalogued
	// methods it does not serve answer unsupported.
	Host *jsonrpc.Table
	// Configure returns the configure params to send after each handshake
	// and on Reconfigure (default: an empty generation).
	Configure func() protocol.ConfigureParams
	// Configured is told each successful configure's params and answer,
	// after the namespace checks (the host records the KV layout then).
	Configured func(protocol.ConfigureParams, protocol.ConfigureResult)
	// HostInfo names the host in initialize.
	HostInfo protocol.HostInfo
	// Initialize carries the rest of initialize's params (config_dir,
	// executor_dirs, resource_dirs …); the session fills in the versions,
	// the host and the state directory.
	Initialize protocol.InitializeParams
	// Versions are the protocol versions the host offers (default
	// protocol.Versions).
	Versions []int
	// Logger receives the host's own lines about this extension.
	Logger *slog.Logger
	// Backoff is the restart policy.
	Backoff Backoff
	// HandshakeTimeout bounds initialize plus configure (default 15 s).
	HandshakeTimeout time.Duration
	// CallTimeout bounds calls whose context has no deadline (default 30 s).
	CallTimeout time.Duration
	// ShutdownGrace is how long each step of Close waits (default 5 s).
	ShutdownGrace time.Duration
}

func (o *Options) defaults() {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Configure == nil {
		o.Configure = func() protocol.ConfigureParams { return protocol.ConfigureParams{} }
	}
	if o.Versions == nil {
		o.Versions = protocol.Versions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Backoff.Min <= 0 {
		o.Backoff.Min = 100 * time.Millisecond
	}
	if o.Backoff.Max <= 0 {
		o.Backoff.Max = 30 * time.Second
	}
	if o.Backoff.ResetAfter <= 0 {
		o.Backoff.ResetAfter = time.Minute
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 15 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 5 * time.Second
	}
	if o.Host == nil {
		o.Host = jsonrpc.NewTable()
	}
}

// Session is the host side of one extension: its process, restarted with
// backoff when it crashes, and the calls made to it. It is safe for
// concurrent use.
type Session struct {
	pkg     Package
	name    string
	opts    Options
	argv    []string
	env     []string
	missing []string
	log     *stderrLog
	table   *jsonrpc.Table
	logger  *slog.Logger

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	state    State
	proc     *process
	conn     *jsonrpc.Conn
	version  int
	restarts int
	lastErr  error
	closing  bool

	stop    chan struct{}
	supDone chan struct{}
	inTx    atomic.Int32
}

// Start starts the package's process and runs the handshake (initialize,
// then configure). It returns once the extension serves, or with the one
// error that says why it could not: start_failed, handshake_failed,
// configure_refused, or a deterministic refusal (unsupported_protocol_version,
// manifest_mismatch). After a successful start the session restarts the
// process whenever it crashes, until Close.
func Start(ctx context.Context, pkg Package, opts Options) (*Session, error) {
	if pkg.Manifest == nil {
		return nil, fmt.Errorf("session: package in %s has no manifest", pkg.Dir)
	}
	opts.defaults()
	m := pkg.Manifest
	s := &Session{
		pkg:     pkg,
		name:    m.Name,
		opts:    opts,
		changed: make(chan struct{}),
		state:   StateStarting,
		stop:    make(chan struct{}),
		supDone: make(chan struct{}),
		logger:  opts.Logger.With("extension", m.Name),
	}
	argv, err := resolveCommand(m.Command, m.Name, pkg.Dir, opts.Self, protocol.IsHostRun(m.Command, m.Name))
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrStartFailed, "extension %s: %v", m.Name, err)
	}
	s.argv = argv
	s.env, s.missing = Environment(opts.Environ, opts.PassEnv)
	if opts.StateDir != "" {
		if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
			return nil, protocol.Errorf(protocol.ErrStartFailed, "extension %s: creating its state directory: %v", m.Name, err)
		}
	}
	if s.log, err = openStderrLog(opts.LogPath, opts.LogLimit); err != nil {
		return nil, protocol.Errorf(protocol.ErrStartFailed, "extension %s: opening its log: %v", m.Name, err)
	}
	s.table = hostTable(opts.Host)
	if err := s.launch(ctx); err != nil {
		s.setState(StateRefused, err)
		s.log.Close()
		close(s.supDone)
		return nil, err
	}
	go s.supervise()
	return s, nil
}

// hostTable is the host's table with every catalogued E→H method it does
// not serve answering unsupported (protocol.UnservedCallback), honestly,
// rather than method_not_found.
func hostTable(served *jsonrpc.Table) *jsonrpc.Table {
	t := jsonrpc.NewTable()
	for _, name := range served.Methods() {
		h, _ := served.Lookup(name)
		t.HandleRaw(name, h)
	}
	for _, m := range protocol.Catalogue() {
		if m.Direction != protocol.ExtensionToHost || t.Has(m.Name) {
			continue
		}
		name := m.Name
		t.HandleRaw(name, func(context.Context, jsontext.Value) (any, error) {
			return nil, protocol.UnservedCallback(name)
		})
	}
	return t
}

// Name is the extension's name.
func (s *Session) Name() string { return s.name }

// Manifest is the package's manifest.
func (s *Session) Manifest() *protocol.Manifest { return s.pkg.Manifest }

// LogPath is the extension's stderr log.
func (s *Session) LogPath() string { return s.log.Path() }

// Status is a snapshot of a session for the operator.
type Status struct {
	Name     string
	State    State
	PID      int
	Protocol int
	Restarts int
	// LastError is the last crash or start failure, "" when none.
	LastError string
	// Started is when the running process started.
	Started time.Time
	// GrantedEnv are the granted variable names that were set; MissingEnv
	// those granted but not set in the daemon's environment.
	GrantedEnv []string
	MissingEnv []string
}

// Status reports the session's state.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.name, State: s.state, Protocol: s.version, Restarts: s.restarts, MissingEnv: s.missing}
	for _, g := range s.opts.PassEnv {
		if !slices.Contains(s.missing, g) {
			st.GrantedEnv = append(st.GrantedEnv, g)
		}
	}
	if s.proc != nil {
		st.PID = s.proc.pid
		st.Started = s.proc.started
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}

// Changed returns a channel closed at the session's next state change.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Session) setState(st State, err error) {
	s.mu.Lock()
	s.state = st
	if err != nil {
		s.lastErr = err
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Call calls an H→E method the manifest enables and waits for the answer.
// It waits, bounded by ctx, for a running process, but never retries: a
// crash mid-call is protocol.ErrTransport, and the caller decides. A method
// the manifest does not enable is never sent (undeclared).
func (s *Session) Call(ctx context.Context, method string, params, result any) error {
	def, err := s.sendable(method)
	if err != nil {
		return err
	}
	if def.InTransaction {
		return fmt.Errorf("session: %s is an in-transaction method: use CallInTx", method)
	}
	conn, err := s.await(ctx)
	if err != nil {
		return err
	}
	return conn.Call(ctx, method, params, result)
}

// CallInTx calls one of the four in-transaction methods: it does not wait
// for a restart, it has a hard 250 ms deadline, and while it is outstanding
// every callback from the extension is refused reentrant_call. A timeout or
// transport failure aborts the caller's transaction, which is retried.
func (s *Session) CallInTx(ctx context.Context, method string, params, result any) error {
	def, err := s.sendable(method)
	if err != nil {
		return err
	}
	if !def.InTransaction {
		return fmt.Errorf("session: %s is not an in-transaction method: use Call", method)
	}
	s.mu.Lock()
	conn, state, last := s.conn, s.state, s.lastErr
	s.mu.Unlock()
	if state != StateRunning || conn == nil {
		return s.notRunning(state, last)
	}
	s.inTx.Add(1)
	defer s.inTx.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, protocol.InTransactionDeadlineMillis*time.Millisecond)
	defer cancel()
	err = conn.Call(ctx, method, params, result)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: extension %s did not answer within %d ms; the transaction is aborted and will be retried: %w",
			method, s.name, protocol.InTransactionDeadlineMillis, err)
	}
	return err
}

// sendable checks that method is a catalogued H→E method the manifest
// enables.
func (s *Session) sendable(method string) (protocol.Method, error) {
	def, ok := protocol.Lookup(method)
	if !ok || def.Direction == protocol.ExtensionToHost {
		return def, fmt.Errorf("session: %q is not a host-to-extension method", method)
	}
	if !s.pkg.Manifest.Enabled(method) {
		return def, protocol.Errorf(protocol.ErrUndeclared,
			"extension %s does not declare the surface %s needs (%s), so the host never sends it", s.name, method, def.Surface)
	}
	return def, nil
}

// await returns the running process's connection, waiting for a restart
// bounded by ctx.
func (s *Session) await(ctx context.Context) (*jsonrpc.Conn, error) {
	for {
		s.mu.Lock()
		conn, state, last, changed := s.conn, s.state, s.lastErr, s.changed
		s.mu.Unlock()
		switch state {
		case StateRunning:
			return conn, nil
		case StateRefused, StateStopped:
			return nil, s.notRunning(state, last)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", s.notRunning(state, last), ctx.Err())
		}
	}
}

func (s *Session) notRunning(state State, last error) error {
	why := ""
	if last != nil {
		why = ": " + last.Error()
	}
	return protocol.Errorf(protocol.ErrTransport, "extension %s is not running (%s)%s", s.name, state, why)
}

// gate applies the host's rules to every callback from the extension,
// before its handler runs (protocol.CheckCallback).
func (s *Session) gate(_ context.Context, method string) error {
	return protocol.CheckCallback(s.pkg.Manifest, method, s.table.Has, s.inTx.Load() > 0)
}

// Reconfigure sends configure again to the running process, without a
// restart (a config apply).
func (s *Session) Reconfigure(ctx context.Context) (protocol.ConfigureResult, error) {
	conn, err := s.await(ctx)
	if err != nil {
		return protocol.ConfigureResult{}, err
	}
	return s.configure(ctx, conn)
}

// Close stops the extension: shutdown, then its stdin is closed, then
// SIGTERM after a grace period, then SIGKILL to its process group. Nothing
// it started in its group is left behind.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.supDone
		return nil
	}
	s.closing = true
	close(s.stop)
	s.mu.Unlock()
	<-s.supDone

	s.mu.Lock()
	p, conn := s.proc, s.conn
	s.mu.Unlock()
	if p != nil {
		s.stopProcess(ctx, p, conn, true)
	}
	s.setState(StateStopped, nil)
	return s.log.Close()
}

// stopProcess ends one process: politely when graceful, then by force.
func (s *Session) stopProcess(ctx context.Context, p *process, conn *jsonrpc.Conn, graceful bool) {
	grace := s.opts.ShutdownGrace
	if graceful && p.alive() && conn != nil {
		sctx, cancel := context.WithTimeout(ctx, grace)
		if err := conn.Call(sctx, protocol.MethodShutdown, protocol.ShutdownParams{}, nil); err != nil {
			s.logger.Debug("shutdown not answered", "err", err)
		}
		cancel()
		_ = conn.CloseWrite()
		if !p.waitExit(grace) {
			s.log.Note("did not exit within %s of stdin closing; sending SIGTERM", grace)
			p.signalGroup(syscall.SIGTERM)
			if !p.waitExit(grace) {
				s.log.Note("did not exit within %s of SIGTERM; sending SIGKILL", grace)
			}
		}
	}
	p.signalGroup(syscall.SIGKILL)
	p.waitExit(grace)
	if conn != nil {
		_ = conn.Close()
	}
	// Whatever else the extension left in its group goes too.
	p.signalGroup(syscall.SIGKILL)
}
