package daemon

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/host/wiretap"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// packages is the daemon's set of packages, by name.
type packages struct {
	// mu guards exts, discovery and every extension's fields. It is never
	// held across a call to a package or a wait.
	mu        sync.Mutex
	exts      map[string]*extension
	discovery []discover.Problem
}

// extension is one package the daemon runs.
type extension struct {
	name string
	// op serializes what starts and stops this package (its first start,
	// an operator's restart, a rescan's replacement), never held by a
	// reader.
	op sync.Mutex
	// tap is the package's wire tap, kept across its restarts and
	// replacements; set once, when the package is first seen.
	tap *wiretap.Ring
	// extState is guarded by packages.mu.
	extState
}

// extState is what changes as a package starts, restarts and stops.
type extState struct {
	pkg     discover.Package
	passEnv []string
	svc     *service.Service
	session *session.Session
	// err is why there is no session: the command could not be prepared
	// (start_failed) or the KV layout is older than recorded (kv_downgrade).
	err error
	// pending is set when its files changed or went away on disk since it
	// started (extension_changed, extension_removed).
	pending string
	tasks   *taskRunner
}

func (p *packages) setDiscovery(problems []discover.Problem) {
	p.mu.Lock()
	p.discovery = problems
	p.mu.Unlock()
}

func (p *packages) get(name string) (*extension, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x, ok := p.exts[name]
	return x, ok
}

// list is every package, by name.
func (p *packages) list() []*extension {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*extension, 0, len(p.exts))
	for _, x := range p.exts {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// hold takes every package's op lock, in name order (the one order every
// holder of several uses), and returns the function that releases them.
func (p *packages) hold() (unlock func()) {
	exts := p.list()
	for _, x := range exts {
		x.op.Lock()
	}
	return func() {
		for _, x := range exts {
			x.op.Unlock()
		}
	}
}

// snapshot reads an extension's guarded fields at once.
func (p *packages) snapshot(x *extension) extState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return x.extState
}

// running returns the package's session when its process serves.
func (p *packages) running(x *extension) *session.Session {
	p.mu.Lock()
	s := x.session
	p.mu.Unlock()
	if s == nil || s.Status().State != session.StateRunning {
		return nil
	}
	return s
}

// runningManifests are the manifests of the packages whose process serves.
func (p *packages) runningManifests() []*protocol.Manifest {
	var ms []*protocol.Manifest
	for _, x := range p.list() {
		if p.running(x) != nil {
			ms = append(ms, p.snapshot(x).pkg.Manifest)
		}
	}
	return ms
}

// validators are what the validation pipeline checks a config with: the
// manifests of the packages whose process serves, the packages that do not
// run (with why, so a config using their types is refused naming them),
// and the asker that has a running package check its own objects.
func (p *packages) validators() ([]*protocol.Manifest, []validate.Failed, validate.Asker) {
	var (
		running []*protocol.Manifest
		failed  []validate.Failed
	)
	sessions := map[string]*session.Session{}
	for _, x := range p.list() {
		snap := p.snapshot(x)
		m := snap.pkg.Manifest
		if s := p.running(x); s != nil {
			running = append(running, m)
			sessions[m.Name] = s
			continue
		}
		failed = append(failed, validate.Failed{Manifest: m, Err: notRunning(x.name, snap)})
	}
	ask := func(ctx context.Context, a validate.Ask) config.Problems {
		return validate.With(ctx, a.Manifest.Name, validate.SessionCaller(sessions[a.Manifest.Name]), a.Objects)
	}
	return running, failed, ask
}

// notRunning says why a package does not serve, with its code.
func notRunning(name string, x extState) error {
	if x.err != nil {
		return x.err
	}
	if x.session == nil {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is starting", name)
	}
	st := x.session.Status()
	code := st.Code
	if code == "" {
		code = protocol.CodeUnavailable
	}
	why := st.LastError
	if why == "" {
		why = string(st.State)
	}
	sentinel, ok := protocol.Sentinel(code)
	if !ok {
		sentinel = protocol.ErrUnavailable
	}
	return protocol.Errorf(sentinel, "%s is %s: %s", name, st.State, firstLine(why))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// closeAll stops every package at once; when ctx ends, at once by force.
func (p *packages) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, x := range p.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.op.Lock()
			defer x.op.Unlock()
			p.stop(ctx, x)
		}()
	}
	wg.Wait()
}

// stop ends a package's tasks and process, by force once ctx ends; the
// caller holds x.op.
func (p *packages) stop(ctx context.Context, x *extension) {
	snap := p.snapshot(x)
	if snap.tasks != nil {
		snap.tasks.stop()
	}
	if snap.session != nil {
		_ = snap.session.Close(ctx)
	}
}

// drop forgets a stopped package.
func (p *packages) drop(x *extension) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exts[x.name] == x {
		delete(p.exts, x.name)
	}
}

// view describes a package for the operator.
func (d *Daemon) view(x *extension) client.Extension {
	snap := d.pkgs.snapshot(x)
	m := snap.pkg.Manifest
	v := client.Extension{
		Name: m.Name, Version: m.Version, Title: m.Title, Source: string(snap.pkg.Source),
		HostRun: snap.pkg.HostRun, Replaces: snap.pkg.Replaces, Dir: snap.pkg.Dir,
		Permissions: m.Permissions, Log: d.dirs.ExtensionLog(m.Name), Surfaces: m.Provides.Summary(),
	}
	switch {
	case snap.session != nil:
		st := snap.session.Status()
		v.State, v.Code, v.PID, v.Protocol, v.Restarts = string(st.State), st.Code, st.PID, st.Protocol, st.Restarts
		v.Started, v.NextRestart = st.Started, st.NextRestart
		v.LastError, v.GrantedEnv, v.MissingEnv = st.LastError, st.GrantedEnv, st.MissingEnv
		if st.State == session.StateRunning && st.Code == protocol.CodeTransport {
			// Running again after a crash: the crash is history, shown as
			// a restart, not as the state's cause.
			v.Code = protocol.CodeExtensionRestarted
		}
	case snap.err != nil:
		v.State, v.Code, v.LastError = "failed", codeOr(snap.err, protocol.CodeStartFailed), snap.err.Error()
		if v.Code == protocol.CodeKVDowngrade {
			v.State = string(session.StateRefused)
		}
	default:
		v.State = string(session.StateStarting)
	}
	if v.Code != "" {
		v.Remedy = remedy(v.Code, m.Name)
	}
	if snap.pending != "" {
		v.Pending = remedy(snap.pending, m.Name)
		if diag, ok := protocol.Diagnose(snap.pending); ok {
			v.Pending = diag.Summary + ": " + v.Pending
		}
	}
	if snap.svc != nil {
		v.Refused = snap.svc.Refused()
	}
	if snap.tasks != nil {
		v.Tasks = snap.tasks.views()
	}
	return v
}

// remedy is what to change for a code, with the package's name filled in.
func remedy(code, name string) string {
	diag, ok := protocol.Diagnose(code)
	if !ok {
		return ""
	}
	return strings.ReplaceAll(diag.Remedy, "NAME", name)
}

// Extensions describes every package, and what discovery skipped.
func (d *Daemon) Extensions() client.Extensions {
	out := client.Extensions{Extensions: []client.Extension{}}
	for _, x := range d.pkgs.list() {
		out.Extensions = append(out.Extensions, d.view(x))
	}
	d.pkgs.mu.Lock()
	for _, p := range d.pkgs.discovery {
		out.Skipped = append(out.Skipped, client.Skipped{Dir: p.Dir, Name: p.Name, Code: p.Code, Message: p.Message})
	}
	d.pkgs.mu.Unlock()
	return out
}

func sortRefusals(rs []client.Refusal) {
	slices.SortFunc(rs, func(a, b client.Refusal) int { return strings.Compare(a.Extension, b.Extension) })
}

func errUnknownExtension(name string) error {
	return protocol.Errorf(protocol.ErrNotFound,
		"no extension is named %q; 'open-conduit extension list' shows them, and 'open-conduit extension rescan' finds one installed since the daemon started", name)
}

// describe is a package's identity for log lines.
func describe(p discover.Package) string {
	return fmt.Sprintf("%s %s (%s)", p.Name, p.Manifest.Version, p.Source)
}
