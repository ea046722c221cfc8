// Package daemon is open-conduit serve, the composition root: it opens the
// store, discovers the packages and checks them as a set, starts every one
// behind its scoped host service, validates the configuration with them,
// makes it the live generation, runs the packages' tasks, and serves the
// management API (host/api) on a Unix socket in the state directory. Its
// exported methods are the facade the API adapts; no domain rule lives in
// an HTTP handler.
//
// # Start order
//
//  1. Refuse a config or state directory another user could change (the
//     rules are in guard.go), read the config file and parse it (a named
//     file that is missing is an error; only the default location falls
//     back to the embedded default), then lock the state directory, reap
//     what the packages of an earlier run that did not stop left running,
//     and open the store under the marker's rules: a store that lost what
//     the state directory recorded refuses the start (store.go).
//  2. Discover the packages; a conflicting set refuses the start.
//  3. Serve the management API (status answers "starting").
//  4. Start every package at once; each first configure carries the empty
//     generation (id 0). A package whose first start fails transiently is
//     retried in the background with the crash backoff.
//  5. Validate the configuration with the packages that started (the
//     offline rules, then each package's own validate). A package that did
//     not start leaves its types unknown, so a configuration using them is
//     refused, and the daemon does not start.
//  6. Make it the live generation (its number kept when the text is the
//     one the store recorded last), configure every package with it, run
//     the tasks.
package daemon

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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/api"
	"github.com/open-conduit/open-conduit/host/artifacts"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/host/toolbelt"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// Options configures a daemon. Zero values mean the defaults.
type Options struct {
	// StateDir holds the store, the logs, the packages' state directories
	// and the API socket. Required; made absolute.
	StateDir string
	// ConfigFile is the operator's config file; installed packages are in
	// extensions/ beside it. Required; made absolute.
	ConfigFile string
	// ConfigNamed says the operator named ConfigFile. Then a missing file
	// is an error; only the default location may be missing, and the
	// daemon runs the embedded default.
	ConfigNamed bool
	// Bundled is the extensions directory beside the binary.
	Bundled string
	// Served are the first-party packages the binary serves itself, with
	// their manifests.
	Served map[string]*protocol.Manifest
	// Self is the executable host-run packages run (default: this one).
	Self string
	// Version is the daemon's version, sent in initialize.
	Version string
	// Environ is the daemon's environment (default os.Environ()).
	Environ []string
	// Logger is the daemon's log (default: stderr, text, info).
	Logger *slog.Logger
	// Limits are the causal bounds of derived Events (default depth 32,
	// 600 a minute per chain).
	Limits pebblekv.Limits
	// Backoff is each extension's restart policy.
	Backoff session.Backoff
	// HandshakeTimeout bounds each package's initialize and configure
	// (default 15 s).
	HandshakeTimeout time.Duration
	// AcceptStoreLoss starts on the store as it is when it lost what the
	// state directory recorded (missing, empty, another store, fewer
	// commits than acknowledged), instead of refusing the start. The
	// record is then reset to that store, so it is for one start.
	AcceptStoreLoss bool
	// WebhookAddr is where the webhook listener listens (default
	// engine.DefaultWebhookAddr: loopback, a port the system picks). It is
	// taken as the operator gave it.
	WebhookAddr string
}

// Daemon is a running open-conduit serve. Its methods are safe for
// concurrent use.
type Daemon struct {
	opts    Options
	dirs    config.Dirs
	db      *pebblekv.DB
	store   storeState
	logger  *slog.Logger
	started time.Time
	lock    *os.File

	// ctx lives as long as the daemon: restarts and tasks run under it.
	ctx    context.Context
	cancel context.CancelFunc

	phase atomic.Pointer[string]
	// gen is the live generation: one immutable value, swapped whole.
	gen atomic.Pointer[config.Generation]
	// changeMu serializes what changes the generation or the package set
	// (apply, reload, rescan). It is never held while waiting on the API.
	changeMu sync.Mutex

	pkgs packages
	// procs records this run, so a later start can reap what it leaves.
	procs *processes
	// events is closed and replaced each time the log grows, for long
	// polls.
	events eventsSignal
	// webhooks is what each package's last configure registered: its
	// webhook paths and sources, for the engine's ingress.
	webhooks *ingressRoutes
	// webhookAddr is where the webhook listener listens, once it does.
	webhookAddr atomic.Pointer[string]
	// changes counts Event and Work changes for GET /v1/changes.
	changes changeTicker

	// engine routes Events to Work, fires timers and takes ingress in.
	engine *engine.Engine
	// toolbelt serves executions' operation calls.
	toolbelt *toolbelt.Server
	// artifacts keeps what the packages write through artifact.*, under
	// <state>/artifacts.
	artifacts *artifacts.Store

	server *api.Server
	closed chan struct{}
	once   sync.Once
}

// Start brings the daemon up; the Start order in the package doc says how.
// It returns once the configuration is live, or with the one error that
// says why the daemon cannot run.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	d, err := newDaemon(opts)
	if err != nil {
		return nil, err
	}
	if err := d.start(ctx); err != nil {
		d.shutdown(context.Background())
		return nil, err
	}
	return d, nil
}

func newDaemon(opts Options) (*Daemon, error) {
	if opts.StateDir == "" || opts.ConfigFile == "" {
		return nil, errors.New("daemon: Options.StateDir and Options.ConfigFile are required")
	}
	var err error
	if opts.StateDir, err = filepath.Abs(opts.StateDir); err != nil {
		return nil, err
	}
	if opts.ConfigFile, err = filepath.Abs(opts.ConfigFile); err != nil {
		return nil, err
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.Limits == (pebblekv.Limits{}) {
		opts.Limits = pebblekv.Limits{MaxDepth: 32, PerMinute: 600}
	}
	d := &Daemon{
		opts:    opts,
		dirs:    config.Dirs{Config: filepath.Dir(opts.ConfigFile), State: opts.StateDir},
		logger:  opts.Logger,
		started: time.Now(),
		closed:  make(chan struct{}),
	}
	d.webhooks = newIngressRoutes()
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.setPhase(client.PhaseStarting)
	d.pkgs.exts = map[string]*extension{}
	d.events.init()
	return d, nil
}

func (d *Daemon) start(ctx context.Context) error {
	// The config is read first: a wrong --config touches nothing.
	if err := d.guardConfig(); err != nil {
		return err
	}
	startup, err := d.readConfig()
	if err != nil {
		return err
	}
	if err := d.prepareState(); err != nil {
		return err
	}
	if err := d.takeLock(); err != nil {
		return err
	}
	if err := d.reapOrphans(); err != nil {
		return err
	}
	if err := d.openStore(); err != nil {
		return err
	}
	if d.artifacts, err = artifacts.Open(d.db, filepath.Join(d.opts.StateDir, "artifacts")); err != nil {
		return err
	}
	d.newEngine()
	if err := d.startToolbelt(); err != nil {
		return err
	}
	if err := d.listenWebhooks(); err != nil {
		return err
	}
	pkgs, err := d.discover()
	if err != nil {
		return err
	}
	exts := d.pkgs.add(pkgs)
	if err := d.serveAPI(); err != nil {
		return err
	}
	d.startAll(ctx, exts, startup.passEnv)
	candidate, err := d.checkStartup(ctx, startup)
	if err != nil {
		return err
	}
	g, err := d.adopt(candidate)
	if err != nil {
		return err
	}
	d.configureAll(ctx)
	d.engine.Start(d.ctx)
	d.startTasks()
	d.setPhase(client.PhaseRunning)
	d.logger.Info("open-conduit serving", "state", d.opts.StateDir, "socket", d.dirs.Socket(),
		"config", sourceName(g.Source), "generation", g.ID, "extensions", len(pkgs))
	return nil
}

func (d *Daemon) setPhase(p string) { d.phase.Store(&p) }

// Phase is starting, running or stopping.
func (d *Daemon) Phase() string { return *d.phase.Load() }

// takeLock makes the state directory this daemon's alone.
func (d *Daemon) takeLock() error {
	path := filepath.Join(d.opts.StateDir, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("another open-conduit daemon is using %s; stop it first, or pass another --state", d.opts.StateDir)
	}
	d.lock = f
	return nil
}

// serveAPI listens on the state directory's socket, owner-only, and serves
// the management API. It answers from the first moment: nothing the daemon
// does while starting or restarting a package holds it.
func (d *Daemon) serveAPI() error {
	path := d.dirs.Socket()
	// The lock proves no other daemon owns this state directory, so a socket
	// left here is a crashed daemon's.
	_ = os.Remove(path)
	// The umask (prepareState) makes the socket owner-only as it is
	// created; the chmod only trims the execute bit.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	d.server = api.NewServer(d, api.ServerOptions{MaxConns: apiConnections(), Logger: d.logger})
	go func() {
		if err := d.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("management API stopped", "err", err)
		}
	}()
	return nil
}

// Close stops the daemon: the API, the tasks, every extension (shutdown,
// then signals to its group), and the store. It is safe to call twice.
func (d *Daemon) Close() error {
	d.shutdown(context.Background())
	d.logger.Info("open-conduit stopped")
	return nil
}

// shutdown stops everything; when ctx ends, the packages still stopping
// are killed at once.
func (d *Daemon) shutdown(ctx context.Context) {
	d.once.Do(func() {
		d.setPhase(client.PhaseStopping)
		close(d.closed)
		if d.server != nil {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = d.server.Shutdown(sctx)
			cancel()
			_ = os.Remove(d.dirs.Socket())
		}
		d.cancel()
		d.stopToolbelt(ctx)
		d.stopEngine(ctx)
		d.pkgs.closeAll(ctx)
		d.procs.release(d.logger)
		if d.artifacts != nil {
			_ = d.artifacts.Close()
		}
		if d.db != nil {
			_ = d.db.Close()
		}
		d.store.marker.close()
		if d.lock != nil {
			_ = d.lock.Close()
		}
	})
}

// Done is closed when Close has begun.
func (d *Daemon) Done() <-chan struct{} { return d.closed }

// DB is the daemon's store, for tests.
func (d *Daemon) DB() *pebblekv.DB { return d.db }

// eventsSignal wakes long polls when the event log grows.
type eventsSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *eventsSignal) init() { s.ch = make(chan struct{}) }

// wait returns a channel closed at the next broadcast.
func (s *eventsSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *eventsSignal) broadcast() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// discover finds the packages and checks them as a set.
func (d *Daemon) discover() ([]discover.Package, error) {
	pkgs, problems := discover.Discover(d.discoverOptions())
	d.pkgs.setDiscovery(problems)
	for _, p := range problems {
		d.logger.Warn("package skipped", "dir", p.Dir, "code", p.Code, "reason", p.Message)
	}
	if err := discover.CheckConflicts(pkgs); err != nil {
		return nil, err
	}
	return pkgs, nil
}

func (d *Daemon) discoverOptions() discover.Options {
	return discover.Options{Installed: d.dirs.Installed(), Bundled: d.opts.Bundled, Served: d.opts.Served}
}
