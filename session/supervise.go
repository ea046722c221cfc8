package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// launch starts one process and runs the handshake. On success the process
// is the session's current one; on failure it is gone and the error says
// what to do.
func (s *Session) launch(ctx context.Context) error {
	s.log.resetTail()
	p, err := spawn(s.argv, s.pkg.Dir, s.env, s.log)
	if err != nil {
		return protocol.Errorf(protocol.ErrStartFailed,
			"extension %s could not start: %v (command %q in %s). Check that it exists and is executable for this platform",
			s.name, err, s.argv, s.pkg.Dir)
	}
	s.log.Note("started %s (pid %d)", strings.Join(s.argv, " "), p.pid)
	conn := jsonrpc.New(p.stdout, p.stdin, jsonrpc.Options{
		Peer:        "extension " + s.name,
		Handlers:    s.table,
		Gate:        s.gate,
		Logger:      s.logger,
		CallTimeout: s.opts.CallTimeout,
	})
	hctx, cancel := context.WithTimeout(ctx, s.opts.HandshakeTimeout)
	defer cancel()
	go func() {
		// A process that dies mid-handshake ends the wait at once.
		select {
		case <-p.exited:
			cancel()
		case <-hctx.Done():
		}
	}()
	version, phase, err := s.handshake(hctx, conn)
	if err != nil {
		err = s.handshakeError(p, phase, err)
		s.stopProcess(context.Background(), p, conn, false)
		s.log.Note("%v", err)
		return err
	}
	s.mu.Lock()
	s.proc, s.conn, s.version = p, conn, version
	s.mu.Unlock()
	s.setState(StateRunning, nil)
	s.logger.Info("extension started", "pid", p.pid, "protocol", version, "granted_env", s.opts.PassEnv, "missing_env", s.missing)
	return nil
}

// handshake runs initialize and configure, and names the phase it failed in.
func (s *Session) handshake(ctx context.Context, conn *jsonrpc.Conn) (version int, phase string, err error) {
	m := s.pkg.Manifest
	var res protocol.InitializeResult
	params := s.opts.Initialize
	params.ProtocolVersions = s.opts.Versions
	params.Host = s.opts.HostInfo
	params.StateDir = s.opts.StateDir
	err = conn.Call(ctx, protocol.MethodInitialize, params, &res)
	if err != nil {
		return 0, protocol.MethodInitialize, err
	}
	if !slices.Contains(s.opts.Versions, res.ProtocolVersion) || !slices.Contains(m.Protocol, res.ProtocolVersion) {
		return 0, protocol.MethodInitialize, protocol.Errorf(protocol.ErrUnsupportedProtocolVersion,
			"extension %s answered protocol version %d, which is not one both sides speak (host %v, manifest %v)",
			s.name, res.ProtocolVersion, s.opts.Versions, m.Protocol)
	}
	if !m.SemanticallyEqual(&res.Manifest) {
		return 0, protocol.MethodInitialize, protocol.Errorf(protocol.ErrManifestMismatch,
			"extension %s announced a manifest that differs from %s (first difference: %s); the binary and the manifest are from different releases: reinstall the package",
			s.name, protocol.ManifestFile, m.Diff(&res.Manifest))
	}
	if _, err := s.configure(ctx, conn); err != nil {
		return 0, protocol.MethodConfigure, err
	}
	return res.ProtocolVersion, "", nil
}

// configure sends the current generation and checks that what the
// extension registers stays in its namespaces.
func (s *Session) configure(ctx context.Context, conn *jsonrpc.Conn) (protocol.ConfigureResult, error) {
	var res protocol.ConfigureResult
	params := s.opts.Configure()
	if err := conn.Call(ctx, protocol.MethodConfigure, params, &res); err != nil {
		if protocol.CodeOf(err) == protocol.CodeTransport || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return res, err
		}
		return res, protocol.Errorf(protocol.ErrConfigureRefused, "extension %s refused its configuration (%s): %v", s.name, protocol.CodeOf(err), err)
	}
	m := s.pkg.Manifest
	for _, src := range res.Sources {
		if !protocol.SourceNamespace(s.name, src.Name) {
			return res, protocol.Errorf(protocol.ErrConfigureRefused,
				"extension %s registered source %q outside its namespace (%s or %s/…)", s.name, src.Name, s.name, s.name)
		}
		for _, f := range src.Families {
			if !m.Family(f) {
				return res, protocol.Errorf(protocol.ErrConfigureRefused,
					"extension %s registered source %q with family %q, which its manifest does not declare", s.name, src.Name, f)
			}
		}
	}
	for _, path := range res.WebhookPaths {
		root := "/" + s.name
		if path != root && !strings.HasPrefix(path, root+"/") {
			return res, protocol.Errorf(protocol.ErrConfigureRefused,
				"extension %s registered webhook path %q outside %s/", s.name, path, root)
		}
	}
	if s.opts.Configured != nil {
		s.opts.Configured(params, res)
	}
	return res, nil
}

// handshakeError makes one error of a failed handshake: the phase, how the
// process ended, its last stderr lines, the command and where its log is.
func (s *Session) handshakeError(p *process, phase string, err error) error {
	switch protocol.CodeOf(err) {
	case protocol.CodeUnsupportedProtocolVersion, protocol.CodeManifestMismatch, protocol.CodeConfigureRefused:
		return err
	}
	// A process that broke the handshake by exiting is reaped within
	// moments of its EOF; one that is still running is reported as it is.
	exited := p.waitExit(200 * time.Millisecond)
	if !exited {
		// Kill it now, so its stderr is complete for the message.
		p.signalGroup(syscall.SIGKILL)
		p.waitExit(time.Second)
	}
	select {
	case <-p.stderrWG:
	case <-time.After(500 * time.Millisecond):
	}
	var b strings.Builder
	fmt.Fprintf(&b, "extension %s failed its handshake during %s: ", s.name, phase)
	if exited {
		b.WriteString(p.exitStatus())
	} else if errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(&b, "no answer within %s", s.opts.HandshakeTimeout)
	} else {
		b.WriteString(err.Error())
	}
	fmt.Fprintf(&b, " (command %q)", strings.Join(s.argv, " "))
	if tail := s.log.Tail(); len(tail) > 0 {
		b.WriteString(". Last lines of its stderr:\n    " + strings.Join(tail, "\n    ") + "\n")
	} else {
		b.WriteString(". It wrote nothing to stderr. ")
	}
	if path := s.log.Path(); path != "" {
		fmt.Fprintf(&b, "Read %s; an extension", path)
	} else {
		b.WriteString("An extension")
	}
	b.WriteString(" writes only protocol messages to stdout and its logs to stderr")
	return protocol.Errorf(protocol.ErrHandshakeFailed, "%s", b.String())
}

// supervise restarts the process after each crash, with backoff, until
// Close or a deterministic refusal.
func (s *Session) supervise() {
	defer close(s.supDone)
	policy := restartPolicy{b: s.opts.Backoff}
	for {
		s.mu.Lock()
		p, conn := s.proc, s.conn
		s.mu.Unlock()
		select {
		case <-p.exited:
		case <-conn.Done():
		case <-s.stop:
			return
		}
		crash := s.crashError(p, conn)
		s.stopProcess(context.Background(), p, conn, false)
		s.log.Note("%v", crash)
		s.logger.Warn("extension crashed", "err", crash)
		s.mu.Lock()
		s.proc, s.conn = nil, nil
		s.restarts++
		s.mu.Unlock()
		s.setState(StateRestarting, crash)
		wait := policy.afterCrash(time.Since(p.started))
		for {
			if !s.sleep(wait) {
				return
			}
			ctx, cancel := s.stopContext()
			err := s.launch(ctx)
			cancel()
			if err == nil {
				break
			}
			if s.stopping() {
				return
			}
			if refused(err) {
				s.setState(StateRefused, err)
				return
			}
			s.setState(StateRestarting, err)
			wait = policy.afterFailedStart()
		}
	}
}

// restartPolicy is the backoff between restarts: Min after the first crash,
// doubling with each crash or failed start up to Max, and back to Min once a
// process has stayed up for ResetAfter.
type restartPolicy struct {
	b    Backoff
	last time.Duration
}

// afterCrash is the wait before restarting a process that ran for uptime.
func (r *restartPolicy) afterCrash(uptime time.Duration) time.Duration {
	if r.last == 0 || uptime >= r.b.ResetAfter {
		r.last = r.b.Min
	} else {
		r.last = min(r.last*2, r.b.Max)
	}
	return r.last
}

// afterFailedStart is the wait before trying again after a restart failed.
func (r *restartPolicy) afterFailedStart() time.Duration {
	r.last = min(r.last*2, r.b.Max)
	return r.last
}

// refused reports a deterministic refusal, which a restart cannot fix.
func refused(err error) bool {
	switch protocol.CodeOf(err) {
	case protocol.CodeUnsupportedProtocolVersion, protocol.CodeManifestMismatch, protocol.CodeKVDowngrade:
		return true
	}
	return false
}

// crashError describes a process that exited or broke the protocol.
func (s *Session) crashError(p *process, conn *jsonrpc.Conn) error {
	p.waitExit(100 * time.Millisecond)
	var why string
	switch {
	case !p.alive():
		why = p.exitStatus()
	case conn.Err() != nil:
		why = conn.Err().Error() + "; the process was killed"
	default:
		why = "the connection ended; the process was killed"
	}
	select {
	case <-p.stderrWG:
	case <-time.After(100 * time.Millisecond):
	}
	msg := fmt.Sprintf("extension %s crashed: %s after %s", s.name, why, time.Since(p.started).Round(time.Millisecond))
	if tail := s.log.Tail(); len(tail) > 0 {
		msg += "; last stderr: " + tail[len(tail)-1]
	}
	return protocol.Errorf(protocol.ErrTransport, "%s", msg)
}

func (s *Session) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop:
		return false
	}
}

func (s *Session) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// stopContext is cancelled by Close, so a restart in progress stops.
func (s *Session) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
