// Package session is the host side of one extension process. New prepares
// a session (command, environment, state directory, bounded stderr log);
// Start launches the process in a session and process group of its own,
// marked (MarkerEnv) so that it and its descendants can be found wherever
// they go, and runs the handshake; from then on the session supervises
// it: a crash fails the calls in flight with transport and restarts the
// process with backoff, and a failed start is retried the same way, except
// the deterministic refusals, which wait for the operator's Restart. Call
// and CallInTx send the host-to-extension methods the manifest enables; a
// call to an extension that is not running fails unavailable, after
// waiting at most RestartWait for a start already under way or due. Every
// callback passes the host's gate. Close stops the process, everything in
// its group, and every process that carries its marker.
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
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// State is where a session's process is in its life.
type State string

// States.
const (
	// StateStarting: the session is new, or a process is being started and
	// handshaken by Start or Restart.
	StateStarting State = "starting"
	// StateRunning: the handshake is done and calls are served.
	StateRunning State = "running"
	// StateRestarting: the process crashed, or a start failed; a new one
	// starts after a backoff (Status.NextRestart says when).
	StateRestarting State = "restarting"
	// StateRefused: a deterministic refusal (no common version, a manifest
	// that differs from the file, a KV downgrade); nothing retries it until
	// the operator's Restart.
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
	// LogRate bounds what stderr adds to the log each second (default
	// 1,000 lines or 256 KiB); lines over it are dropped and counted.
	LogRate LogRate
	// Run is the daemon run's token (NewRun), which every process of the
	// session carries in its marker, and its descendants inherit, so the
	// daemon can find them (Reap). Default: a token of the session's own.
	Run string
	// Detached reports whether a process is an executor's deliberately
	// detached work, recorded by the host: such a process (and what it
	// started) is spared when the extension stops. Default: none is.
	Detached func(pid int) bool
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
	// RestartWait bounds how long a call waits for an extension that is
	// not running: it waits only for a start under way or a restart due
	// within RestartWait, and at most that long, then fails unavailable
	// (default DefaultRestartWait).
	RestartWait time.Duration
	// ShutdownGrace is how long each step of Close waits (default 5 s).
	ShutdownGrace time.Duration
	// Observer, when set, sees every line to and from each process of the
	// session, across restarts (the daemon's wire tap). Outgoing is host
	// to extension. Default: none, at no cost.
	Observer jsonrpc.Observer
}

// DefaultRestartWait is how long, at most, a call waits for an extension
// that is not running, and how soon its restart must be due for the call
// to wait at all.
const DefaultRestartWait = 5 * time.Second

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
	if o.RestartWait <= 0 {
		o.RestartWait = DefaultRestartWait
	}
	if o.Run == "" {
		o.Run = NewRun()
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 5 * time.Second
	}
	if o.Host == nil {
		o.Host = jsonrpc.NewTable()
	}
}

// Session is the host side of one extension: its process, restarted with
// backoff when it crashes or fails to start, and the calls made to it. It
// is safe for concurrent use.
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
	// canon is the package manifest's canonical form, computed once: every
	// launch compares the announced manifest with it.
	canon func() ([]byte, error)
	// written is the package manifest as the SDK writes it in its
	// initialize answer (nil when it cannot be written so), computed once:
	// an answer carrying exactly these bytes needs no decoding.
	written func() []byte

	// ctx is the session's life: Close cancels it, which ends a launch, a
	// backoff sleep or a restart in progress at once.
	ctx    context.Context
	cancel context.CancelFunc

	// op serializes the lifecycle operations (Start, Restart, Close), so
	// only one of them, or the background loop, ever launches a process.
	op      sync.Mutex
	started bool // guarded by op

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every state change
	state       State
	proc        *process
	conn        *jsonrpc.Conn
	version     int
	restarts    int
	lastErr     error
	nextRestart time.Time
	loop        *loop // the background supervision, nil when none runs

	inTx atomic.Int32

	// lastSent is the last method sendable passed, with its definition: the
	// manifest never changes, and a host sends the same method (above all
	// operation.call) over and over, so the check runs once per method
	// change rather than on every call.
	lastSent atomic.Pointer[sentMethod]
}

// sentMethod is a method sendable passed, and its catalogue entry.
type sentMethod struct {
	name string
	def  protocol.Method
}

// New prepares a session: it resolves the command, builds the environment,
// creates the state directory and opens the log. Nothing starts until
// Start. Its errors are start_failed.
func New(pkg Package, opts Options) (*Session, error) {
	if pkg.Manifest == nil {
		return nil, protocol.Errorf(protocol.ErrStartFailed, "session: package in %s has no manifest; discover it before starting it", pkg.Dir)
	}
	opts.defaults()
	m := pkg.Manifest
	s := &Session{
		pkg:     pkg,
		name:    m.Name,
		opts:    opts,
		changed: make(chan struct{}),
		state:   StateStarting,
		logger:  opts.Logger.With("extension", m.Name),
		canon:   sync.OnceValues(m.Canonical),
		written: sync.OnceValue(func() []byte {
			b, err := m.AppendJSON(nil)
			if err != nil {
				return nil
			}
			return b
		}),
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
	if s.log, err = openStderrLog(opts.LogPath, opts.LogLimit, opts.LogRate); err != nil {
		return nil, protocol.Errorf(protocol.ErrStartFailed, "extension %s: opening its log: %v", m.Name, err)
	}
	s.table = hostTable(opts.Host)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start prepares a session (New) and starts it once: it returns once the
// extension serves, or with the one error that says why it could not
// (start_failed, handshake_failed, configure_refused, or a deterministic
// refusal), leaving nothing running and retrying nothing. After a
// successful start the session restarts the process whenever it crashes,
// until Close. Offline validation and the demo use it; a daemon that keeps
// retrying a failing package uses New and (*Session).Start.
func Start(ctx context.Context, pkg Package, opts Options) (*Session, error) {
	s, err := New(pkg, opts)
	if err != nil {
		return nil, err
	}
	s.op.Lock()
	err = s.start(ctx, false)
	s.op.Unlock()
	if err != nil {
		_ = s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

// hostTable is the host's table with every catalogued E→H method it does
// not serve answering unsupported (protocol.UnservedCallback), honestly,
// rather than method_not_found.
func hostTable(served *jsonrpc.Table) *jsonrpc.Table {
	return jsonrpc.Layer(served, unservedCallbacks())
}

// unservedCallbacks answers every catalogued E→H method unsupported, built
// once: every session's table lies over it rather than copying it.
var unservedCallbacks = sync.OnceValue(func() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	for _, m := range protocol.Catalogue() {
		if m.Direction == protocol.ExtensionToHost {
			t.HandleRaw(m.Name, func(context.Context, jsontext.Value) (any, error) {
				return nil, protocol.UnservedCallback(m.Name)
			})
		}
	}
	return t
})

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
	// Restarts counts crashes; an operator's Restart is not one.
	Restarts int
	// LastError is the last crash or start failure, "" when none.
	LastError string
	// Code is LastError's protocol code: transport for a crash,
	// start_failed, handshake_failed, configure_refused,
	// unsupported_protocol_version, manifest_mismatch, kv_downgrade …
	Code string
	// NextRestart is when the next restart is due, zero when none is.
	NextRestart time.Time
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
	st := Status{Name: s.name, State: s.state, Protocol: s.version, Restarts: s.restarts, MissingEnv: s.missing, NextRestart: s.nextRestart}
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
		st.Code = protocol.CodeOf(s.lastErr)
	}
	return st
}

// Changed returns a channel closed at the session's next state change.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// setState records a state change (and err as the last error, when not
// nil) and wakes whoever waits on Changed. No restart is due after it.
func (s *Session) setState(st State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStateLocked(st, err, time.Time{})
}

func (s *Session) setStateLocked(st State, err error, next time.Time) {
	s.state = st
	if err != nil {
		s.lastErr = err
	}
	s.nextRestart = next
	close(s.changed)
	s.changed = make(chan struct{})
}

// Call calls an H→E method the manifest enables and waits for the answer.
// An extension that is not running fails it with protocol.ErrUnavailable:
// at once when it is stopped or refused or its restart is not due within
// RestartWait, else after waiting at most RestartWait (and ctx) for the
// start. Call never retries: a crash mid-call is protocol.ErrTransport, and
// the caller decides. A method the manifest does not enable is never sent
// (undeclared).
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

// Invoke is Call through a method's descriptor, so the params and the
// result are the types the catalogue binds to the method.
func Invoke[P, R any](ctx context.Context, s *Session, d protocol.Desc[P, R], params P) (R, error) {
	var r R
	if err := s.Call(ctx, d.Name, params, &r); err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}

// CallInTx calls one of the four in-transaction methods: it does not wait
// for a restart (an extension that is not running fails it unavailable at
// once), it has a hard 250 ms deadline, and while it is outstanding every
// callback from the extension is refused reentrant_call. A timeout, a
// transport failure or unavailable aborts the caller's transaction, which
// is retried.
func (s *Session) CallInTx(ctx context.Context, method string, params, result any) error {
	def, err := s.sendable(method)
	if err != nil {
		return err
	}
	if !def.InTransaction {
		return fmt.Errorf("session: %s is not an in-transaction method: use Call", method)
	}
	s.mu.Lock()
	conn, state, last, next := s.conn, s.state, s.lastErr, s.nextRestart
	s.mu.Unlock()
	if state != StateRunning || conn == nil {
		return s.notRunning(state, last, next)
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
	if last := s.lastSent.Load(); last != nil && last.name == method {
		return last.def, nil
	}
	def, ok := protocol.Lookup(method)
	if !ok || def.Direction == protocol.ExtensionToHost {
		return def, fmt.Errorf("session: %q is not a host-to-extension method", method)
	}
	if !s.pkg.Manifest.Enabled(method) {
		return def, protocol.Errorf(protocol.ErrUndeclared,
			"extension %s does not declare the surface %s needs (%s), so the host never sends it", s.name, method, def.Surface)
	}
	s.lastSent.Store(&sentMethod{name: method, def: def})
	return def, nil
}

// await returns the running process's connection. When there is none it
// waits only for a start under way or a restart due within RestartWait,
// and at most RestartWait or until ctx ends; otherwise it fails
// unavailable at once.
func (s *Session) await(ctx context.Context) (*jsonrpc.Conn, error) {
	s.mu.Lock()
	conn, state := s.conn, s.state
	s.mu.Unlock()
	if state == StateRunning && conn != nil {
		// The common case costs no timer: arming one wakes the runtime's
		// poller, a syscall per call.
		return conn, nil
	}
	wait := s.opts.RestartWait
	deadline := time.Now().Add(wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		conn, state, last, next, changed := s.conn, s.state, s.lastErr, s.nextRestart, s.changed
		s.mu.Unlock()
		if state == StateRunning && conn != nil {
			return conn, nil
		}
		if !startDue(state, next, deadline) {
			return nil, s.notRunning(state, last, next)
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, fmt.Errorf("%w (waited %s for its start)", s.notRunning(state, last, next), wait)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", s.notRunning(state, last, next), ctx.Err())
		}
	}
}

// startDue reports whether a start is under way (starting, or restarting
// with no restart pending: the launch runs) or due by deadline.
func startDue(state State, next, deadline time.Time) bool {
	switch state {
	case StateStarting:
		return true
	case StateRestarting:
		return next.IsZero() || !next.After(deadline)
	}
	return false
}

// notRunning is the unavailable error of a call to an extension that is
// not running: its state, when its next start is due, and why it stopped.
func (s *Session) notRunning(state State, last error, next time.Time) error {
	when := ""
	if state == StateRestarting && !next.IsZero() {
		when = fmt.Sprintf("; its next start is due in %s", time.Until(next).Round(time.Millisecond))
	}
	why := ""
	if last != nil {
		why = ": " + last.Error()
	}
	return protocol.Errorf(protocol.ErrUnavailable, "extension %s is not running (%s%s)%s", s.name, state, when, why)
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
