// Package daemon is open-conduit serve: it opens the store, loads the
// configuration (or the embedded default), discovers the packages and
// checks them as a set, starts every one at once behind its scoped host
// service, runs their tasks, and serves the management API on a Unix
// socket in the state directory.
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
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// Options configures a daemon. Zero values mean the defaults.
type Options struct {
	// Dirs are the config and state directories.
	Dirs config.Dirs
	// ConfigFile is the config file (default Dirs.ConfigFile()). With no
	// file there, the daemon runs the embedded default.
	ConfigFile string
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
	// Logger is the daemon's log (default: stderr, text).
	Logger *slog.Logger
	// Limits are the causal bounds of derived Events (default depth 32,
	// 600 a minute per chain).
	Limits pebblekv.Limits
	// Backoff is each extension's restart policy.
	Backoff session.Backoff
}

// Daemon is a running open-conduit serve.
type Daemon struct {
	opts    Options
	db      *pebblekv.DB
	logger  *slog.Logger
	started time.Time
	lock    *os.File

	gen   atomic.Pointer[config.Generation]
	genMu sync.Mutex // serializes applies

	mu        sync.Mutex
	exts      map[string]*extension
	discovery []discover.Problem

	listener net.Listener
	server   *http.Server
	stop     context.CancelFunc
	tasks    sync.WaitGroup
	closed   chan struct{}
}

// extension is one package the daemon runs.
type extension struct {
	pkg     discover.Package
	svc     *service.Service
	session *session.Session
	// startErr is why it is not running (start failure, refusal).
	startErr error
	tasks    map[string]*taskState
}

// Start brings the daemon up. It returns once every package has finished
// its handshake (or failed it) and the management API answers.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.ConfigFile == "" {
		opts.ConfigFile = opts.Dirs.ConfigFile()
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
	d := &Daemon{opts: opts, logger: opts.Logger, started: time.Now(), exts: map[string]*extension{}, closed: make(chan struct{})}
	if err := os.MkdirAll(opts.Dirs.State, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory %s: %w", opts.Dirs.State, err)
	}
	if err := d.takeLock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			d.release()
		}
	}()
	db, err := pebblekv.Open(opts.Dirs.Store(), &pebblekv.Options{Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", opts.Dirs.Store(), err)
	}
	d.db = db

	pkgs, problems := discover.Discover(discover.Options{
		Installed: opts.Dirs.Installed(), Bundled: opts.Bundled, Served: opts.Served,
	})
	d.discovery = problems
	for _, p := range problems {
		d.logger.Warn("package skipped", "dir", p.Dir, "code", p.Code, "reason", p.Message)
	}
	if err := discover.CheckConflicts(pkgs); err != nil {
		return nil, err
	}
	data, source, err := d.loadConfig(pkgs)
	if err != nil {
		return nil, err
	}
	g, cps := validate.Run(ctx, validate.Input{Text: data, Source: source, Dir: filepath.Dir(opts.ConfigFile), Running: manifests(pkgs)})
	if g == nil {
		errs := cps.Errors()
		return nil, fmt.Errorf("the configuration has %d problem(s); fix them and start again (open-conduit config check lists them):\n%w", len(errs), errs)
	}
	if err := d.adopt(g); err != nil {
		return nil, err
	}
	d.startAll(ctx, pkgs)

	tctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	d.startTasks(tctx)
	if err := d.serveAPI(); err != nil {
		return nil, err
	}
	ok = true
	d.logger.Info("open-conduit serving", "state", opts.Dirs.State, "socket", opts.Dirs.Socket(),
		"config", d.configSource(), "generation", d.gen.Load().ID, "extensions", len(pkgs))
	return d, nil
}

// takeLock makes the state directory this daemon's alone.
func (d *Daemon) takeLock() error {
	path := filepath.Join(d.opts.Dirs.State, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("another open-conduit daemon is using %s; stop it first, or pass another --state", d.opts.Dirs.State)
	}
	d.lock = f
	return nil
}

func (d *Daemon) release() {
	if d.db != nil {
		_ = d.db.Close()
		d.db = nil
	}
	if d.lock != nil {
		_ = d.lock.Close()
		d.lock = nil
	}
}

func manifests(pkgs []discover.Package) []*protocol.Manifest {
	out := make([]*protocol.Manifest, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Manifest
	}
	return out
}

// loadConfig reads the config file's text, or builds the embedded
// default's when there is none; source is the file, "" for the default.
func (d *Daemon) loadConfig(pkgs []discover.Package) (data []byte, source string, err error) {
	data, err = os.ReadFile(d.opts.ConfigFile)
	if err == nil {
		return data, d.opts.ConfigFile, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	data, err = config.Default(manifests(pkgs)).Marshal()
	return data, "", err
}

func (d *Daemon) configSource() string {
	if _, err := os.Stat(d.opts.ConfigFile); err == nil {
		return d.opts.ConfigFile
	}
	return "embedded default"
}

// startAll starts every package at once and waits for the slowest
// handshake, so adding packages does not add their start times together.
func (d *Daemon) startAll(ctx context.Context, pkgs []discover.Package) {
	var wg sync.WaitGroup
	for _, p := range pkgs {
		x := &extension{pkg: p}
		d.mu.Lock()
		d.exts[p.Name] = x
		d.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.startOne(ctx, x)
		}()
	}
	wg.Wait()
}

func (d *Daemon) startOne(ctx context.Context, x *extension) {
	m := x.pkg.Manifest
	if err := d.checkLayout(m); err != nil {
		d.setStartErr(x, err)
		return
	}
	x.svc = service.New(m, service.Deps{
		DB:         d.db,
		Generation: d.gen.Load,
		Limits:     d.opts.Limits,
		Logger:     d.logger.With("extension", m.Name),
	})
	dir := x.pkg.Dir
	if dir == "" {
		dir = d.opts.Dirs.ExtensionState(m.Name)
	}
	s, err := session.Start(ctx, session.Package{Dir: dir, Manifest: m}, session.Options{
		StateDir:   d.opts.Dirs.ExtensionState(m.Name),
		LogPath:    d.opts.Dirs.ExtensionLog(m.Name),
		PassEnv:    d.gen.Load().Config.PassEnv(m.Name),
		Environ:    d.opts.Environ,
		Self:       d.opts.Self,
		Host:       x.svc.Table(),
		HostInfo:   protocol.HostInfo{Name: "open-conduit", Version: d.opts.Version},
		Initialize: protocol.InitializeParams{ConfigDir: filepath.Dir(d.opts.ConfigFile)},
		Configure:  func() protocol.ConfigureParams { return d.configureParams(m) },
		Configured: func(p protocol.ConfigureParams, _ protocol.ConfigureResult) { d.recordLayout(m, p) },
		Logger:     d.logger,
		Backoff:    d.opts.Backoff,
	})
	if err != nil {
		d.setStartErr(x, err)
		return
	}
	d.mu.Lock()
	x.session = s
	d.mu.Unlock()
}

func (d *Daemon) setStartErr(x *extension, err error) {
	d.logger.Error("extension not started", "extension", x.pkg.Name, "err", err)
	d.mu.Lock()
	x.startErr = err
	d.mu.Unlock()
}

// checkLayout refuses a package whose KV layout is older than the one
// recorded: there is no automatic downgrade.
func (d *Daemon) checkLayout(m *protocol.Manifest) error {
	return d.db.View(func(r *pebblekv.Reader) error {
		stored, recorded, err := r.KVLayoutVersion(m.Name)
		if err != nil {
			return err
		}
		if recorded && m.KVVersion < stored {
			return protocol.Errorf(protocol.ErrKVDowngrade,
				"%s declares KV layout %d but the store holds layout %d, written by a newer release: reinstall that release, or restore a backup taken before the upgrade",
				m.Name, m.KVVersion, stored)
		}
		return nil
	})
}

// recordLayout records the layout a package reported after a successful
// configure, so a crash mid-migration is retried at the next start.
func (d *Daemon) recordLayout(m *protocol.Manifest, p protocol.ConfigureParams) {
	if p.KV.Stored == p.KV.Declared {
		return
	}
	err := d.db.Update(func(tx *pebblekv.Tx) error { return tx.SetKVLayoutVersion(m.Name, p.KV.Declared) })
	if err != nil {
		d.logger.Error("recording the KV layout", "extension", m.Name, "err", err)
	}
}

// Close stops the daemon: the API, the tasks, every extension (shutdown,
// then signals to its group), and the store.
func (d *Daemon) Close() error {
	select {
	case <-d.closed:
		return nil
	default:
	}
	close(d.closed)
	if d.server != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = d.server.Shutdown(sctx)
		cancel()
	}
	if d.stop != nil {
		d.stop()
	}
	d.tasks.Wait()
	var wg sync.WaitGroup
	for _, x := range d.extensions() {
		if x.session == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = x.session.Close(context.Background())
		}()
	}
	wg.Wait()
	_ = os.Remove(d.opts.Dirs.Socket())
	d.release()
	d.logger.Info("open-conduit stopped")
	return nil
}

// Done is closed when Close has begun.
func (d *Daemon) Done() <-chan struct{} { return d.closed }

// extensions lists the daemon's packages by name.
func (d *Daemon) extensions() []*extension {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*extension, 0, len(d.exts))
	for _, x := range d.exts {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pkg.Name < out[j].pkg.Name })
	return out
}

// DB is the daemon's store, for tests.
func (d *Daemon) DB() *pebblekv.DB { return d.db }
