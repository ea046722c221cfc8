package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/host/wiretap"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// startAll starts packages at once and waits for the slowest handshake,
// so adding packages does not add their start times together. passEnv is
// each package's grant of daemon variables.
func (d *Daemon) startAll(ctx context.Context, exts []*extension, passEnv func(string) []string) {
	var wg sync.WaitGroup
	for _, x := range exts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.op.Lock()
			defer x.op.Unlock()
			d.startOne(ctx, x, passEnv(x.name))
		}()
	}
	wg.Wait()
}

// add registers packages the daemon has not run yet, in state starting, so
// the operator sees them from the moment they are found.
func (p *packages) add(pkgs []discover.Package) []*extension {
	out := make([]*extension, len(pkgs))
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pkg := range pkgs {
		out[i] = &extension{name: pkg.Name, tap: wiretap.New(wiretap.Options{}), extState: extState{pkg: pkg}}
		p.exts[pkg.Name] = out[i]
	}
	return out
}

// startOne starts a package behind a new scoped service and session; the
// caller holds x.op. A failed first start is kept as the package's state
// (the session retries a transient one in the background).
func (d *Daemon) startOne(ctx context.Context, x *extension, passEnv []string) {
	d.pkgs.mu.Lock()
	pkg := x.pkg
	x.err, x.pending, x.passEnv = nil, "", passEnv
	d.pkgs.mu.Unlock()
	m := pkg.Manifest
	if err := d.checkLayout(m); err != nil {
		d.setStartErr(x, err)
		return
	}
	svc := service.New(m, service.Deps{
		DB:         d.db,
		Generation: d.gen.Load,
		Limits:     d.opts.Limits,
		Logger:     d.logger.With("extension", m.Name),
		Accepted:   d.accepted,
		// Arming or cancelling a timer wakes the scheduler.
		TimersChanged: d.timersChanged,
		Deliver:       d.deliver,
		WorkChanged:   d.workChanged,
		Artifacts:     d.artifacts,
		// The service judges the caller; the engine applies the lease and
		// the Wait's state.
		PersistRecovery: d.persistRecovery,
		WaitProgress:    d.engine.WaitProgress,
		SettleHold:      d.engine.SettleHold,
	})
	dir := pkg.Dir
	if dir == "" {
		dir = d.dirs.ExtensionState(m.Name)
	}
	s, err := session.New(session.Package{Dir: dir, Manifest: m}, session.Options{
		StateDir:         d.dirs.ExtensionState(m.Name),
		LogPath:          d.dirs.ExtensionLog(m.Name),
		PassEnv:          passEnv,
		Environ:          d.opts.Environ,
		Self:             d.opts.Self,
		Host:             svc.Table(),
		HostInfo:         protocol.HostInfo{Name: "open-conduit", Version: d.opts.Version},
		Initialize:       protocol.InitializeParams{ConfigDir: d.dirs.Config, ArtifactWindow: protocol.ArtifactWindow},
		Configure:        func() protocol.ConfigureParams { return d.configureParams(m) },
		Configured:       d.configured(m),
		Logger:           d.logger,
		Backoff:          d.opts.Backoff,
		HandshakeTimeout: d.opts.HandshakeTimeout,
		Run:              d.procs.token(),
		Detached:         d.procs.isDetached,
		Observer:         x.tap,
	})
	if err != nil {
		d.setStartErr(x, err)
		return
	}
	tasks := newTaskRunner(d, x.name, s, m.Provides.Tasks)
	d.pkgs.mu.Lock()
	x.svc, x.session, x.tasks = svc, s, tasks
	d.pkgs.mu.Unlock()
	d.watchStarts(s)
	if err := s.Start(ctx); err != nil {
		d.logger.Error("extension not started", "extension", m.Name, "code", protocol.CodeOf(err), "err", err)
	}
	if d.Phase() == client.PhaseRunning {
		tasks.start()
	}
}

func (d *Daemon) setStartErr(x *extension, err error) {
	d.logger.Error("extension not started", "extension", x.name, "code", protocol.CodeOf(err), "err", err)
	d.pkgs.mu.Lock()
	x.err = err
	d.pkgs.mu.Unlock()
}

// Restart restarts one package: its process is stopped and started again
// (with the files on disk now, and the grant of the live generation);
// nothing else is. The restart runs apart from the request: the answer
// waits up to wait for it, and the package's state tells the rest.
func (d *Daemon) Restart(ctx context.Context, name string, wait time.Duration) (client.RestartResult, error) {
	if d.Phase() != client.PhaseRunning {
		return client.RestartResult{}, errStarting()
	}
	x, ok := d.pkgs.get(name)
	if !ok {
		return client.RestartResult{}, errUnknownExtension(name)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		x.op.Lock()
		defer x.op.Unlock()
		d.restartOne(d.ctx, x)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	res := client.RestartResult{}
	select {
	case <-done:
		res.Done = true
	case <-timer.C:
	case <-ctx.Done():
	}
	res.Extension = d.view(x)
	return res, nil
}

// restartOne restarts x; the caller holds x.op. A package whose files and
// grant are unchanged keeps its session (Session.Restart); otherwise the
// package is started anew from what discovery finds on disk now.
func (d *Daemon) restartOne(ctx context.Context, x *extension) {
	snap := d.pkgs.snapshot(x)
	passEnv := d.passEnv(x.name)
	fresh, err := d.rediscover(snap.pkg)
	if err != nil {
		d.logger.Error("restart", "extension", x.name, "err", err)
		d.pkgs.mu.Lock()
		x.pending = protocol.CodeExtensionRemoved
		d.pkgs.mu.Unlock()
		return
	}
	d.logger.Info("restarting extension", "extension", x.name, "by", "operator")
	if snap.session != nil && snap.err == nil && samePackage(snap.pkg, fresh) && slices.Equal(snap.passEnv, passEnv) {
		if err := snap.session.Restart(ctx); err != nil {
			d.logger.Error("restart", "extension", x.name, "code", protocol.CodeOf(err), "err", err)
		}
		return
	}
	d.pkgs.stop(ctx, x)
	d.pkgs.mu.Lock()
	x.pkg, x.svc, x.session, x.tasks = fresh, nil, nil, nil
	d.pkgs.mu.Unlock()
	d.startOne(ctx, x, passEnv)
}

// removeOne stops a package whose directory is gone and drops it from the
// set, so nothing it served answers any more and a later install of the
// same name is a new package; its durable state stays.
func (d *Daemon) removeOne(x *extension) {
	x.op.Lock()
	defer x.op.Unlock()
	d.pkgs.stop(d.ctx, x)
	d.pkgs.drop(x)
	d.webhooks.drop(x.name)
	d.logger.Info("package removed: stopped", "extension", x.name)
}

// passEnv is the live generation's grant of daemon variables to a package.
func (d *Daemon) passEnv(name string) []string {
	if g := d.gen.Load(); g != nil {
		return g.Config.PassEnv(name)
	}
	return nil
}

// samePackage reports whether two discoveries of a package are the same
// release in the same place.
func samePackage(a, b discover.Package) bool {
	return a.Dir == b.Dir && a.Source == b.Source && a.Manifest.SemanticallyEqual(b.Manifest)
}

// rediscover finds a package on disk again, as discovery would now.
func (d *Daemon) rediscover(was discover.Package) (discover.Package, error) {
	pkgs, _ := discover.Discover(d.discoverOptions())
	for _, p := range pkgs {
		if p.Name == was.Name {
			return p, nil
		}
	}
	return discover.Package{}, protocol.Errorf(protocol.ErrNotFound,
		"%s is no longer in %s, beside the binary, or served by it; it keeps running until the daemon stops", was.Name, filepath.Dir(was.Dir))
}

// Rescan discovers the packages again. New packages are admitted when the
// whole set still has no conflict (else none of them is) and started; a
// package whose files changed or went away keeps running as it started,
// marked so the operator knows a restart would change it.
func (d *Daemon) Rescan(context.Context) (client.Rescan, error) {
	if d.Phase() != client.PhaseRunning {
		return client.Rescan{}, errStarting()
	}
	d.changeMu.Lock()
	defer d.changeMu.Unlock()
	return d.rescanLocked()
}

// rescanLocked is Rescan; the caller holds changeMu.
func (d *Daemon) rescanLocked() (client.Rescan, error) {
	found, problems := discover.Discover(d.discoverOptions())
	var res client.Rescan
	for _, p := range problems {
		res.Skipped = append(res.Skipped, client.Skipped{Dir: p.Dir, Name: p.Name, Code: p.Code, Message: p.Message})
	}
	d.pkgs.setDiscovery(problems)
	seen := map[string]bool{}
	var added []discover.Package
	set := []discover.Package{}
	for _, p := range found {
		seen[p.Name] = true
		x, ok := d.pkgs.get(p.Name)
		if !ok {
			added = append(added, p)
			set = append(set, p)
			continue
		}
		snap := d.pkgs.snapshot(x)
		set = append(set, snap.pkg)
		pending := ""
		if !samePackage(snap.pkg, p) {
			pending = protocol.CodeExtensionChanged
			res.Changed = append(res.Changed, p.Name)
		}
		d.pkgs.mu.Lock()
		x.pending = pending
		d.pkgs.mu.Unlock()
	}
	for _, x := range d.pkgs.list() {
		if !seen[x.name] {
			res.Removed = append(res.Removed, x.name)
			d.removeOne(x)
		}
	}
	if len(added) == 0 {
		return res, nil
	}
	if err := discover.CheckConflicts(set); err != nil {
		var ce *discover.ConflictError
		code := protocol.CodeRegistrationConflict
		for _, p := range added {
			res.Refused = append(res.Refused, client.Refusal{Extension: p.Name, Code: code, Message: err.Error()})
		}
		if !errors.As(err, &ce) {
			return res, err
		}
		return res, nil
	}
	for _, p := range added {
		res.Added = append(res.Added, p.Name)
		d.logger.Info("package found", "extension", describe(p))
	}
	// The new packages live as long as the daemon, not the request.
	d.startAll(d.ctx, d.pkgs.add(added), d.passEnv)
	return res, nil
}
