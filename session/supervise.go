package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// launch starts one process and runs the handshake. On success the process
// is the session's current one; on failure it is gone and the error says
// what to do.
func (s *Session) launch(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("extension %s was not started: %w", s.name, err)
	}
	s.mu.Lock()
	s.nextRestart = time.Time{}
	s.mu.Unlock()
	s.log.resetTail()
	p, err := spawn(s.argv, s.pkg.Dir, s.env, marker(s.opts.Run, s.name), s.log)
	if err != nil {
		return protocol.Errorf(protocol.ErrStartFailed,
			"extension %s could not start: %v (command %q in %s). Check that it exists and is executable for this platform",
			s.name, err, s.argv, s.pkg.Dir)
	}
	s.log.Note("started %s (pid %d)", strings.Join(s.argv, " "), p.pid)
	// The package manifest's forms are ready before the initialize answer
	// they are compared with: the host is otherwise idle while the process
	// starts.
	go func() {
		s.written()
		s.canon()
	}()
	conn := jsonrpc.New(p.out, p.in, jsonrpc.Options{
		Peer:        "extension " + s.name,
		Handlers:    s.table,
		Gate:        s.gate,
		Logger:      s.logger,
		CallTimeout: s.opts.CallTimeout,
		Observer:    s.opts.Observer,
		// The host calls; its callers read their own answers.
		CallerReads: true,
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
		err = s.handshakeError(ctx, p, conn, phase, err)
		s.stopProcess(ctx, p, conn, false)
		s.log.Note("%v", err)
		return err
	}
	s.mu.Lock()
	s.proc, s.conn, s.version = p, conn, version
	s.setStateLocked(StateRunning, nil, time.Time{})
	s.mu.Unlock()
	s.logger.Info("extension started", "pid", p.pid, "protocol", version, "granted_env", s.opts.PassEnv, "missing_env", s.missing)
	return nil
}

// handshake runs initialize and configure, and names the phase it failed in.
//
// configure goes out right behind initialize, before its answer, so a start
// costs one round trip rather than two (about 0.1 ms of the 2 to 3 ms a
// start takes on the benchmark machine): the extension reads configure once
// it has served initialize. An extension that serves requests at once may
// find configure before initialize is done and answer not_initialized, as
// the protocol asks of any request before initialize; configure is then
// sent again. A configure that asks for a KV migration waits for
// initialize's answer, so no process migrates the store before its
// manifest is checked.
func (s *Session) handshake(ctx context.Context, conn *jsonrpc.Conn) (version int, phase string, err error) {
	m := s.pkg.Manifest
	params := s.opts.Initialize
	params.ProtocolVersions = s.opts.Versions
	params.Host = s.opts.HostInfo
	params.StateDir = s.opts.StateDir
	ans := announced{written: s.written}
	initCall, err := conn.Start(ctx, protocol.Initialize.Name, params, &ans)
	if err != nil {
		return 0, protocol.MethodInitialize, err
	}
	cparams := s.opts.Configure()
	var conf *configureSent
	if cparams.KV.Stored >= cparams.KV.Declared {
		conf = s.sendConfigure(ctx, conn, cparams)
	}
	if err := initCall.Wait(); err != nil {
		return 0, protocol.MethodInitialize, err
	}
	res := &ans.result
	if !slices.Contains(s.opts.Versions, res.ProtocolVersion) || !slices.Contains(m.Protocol, res.ProtocolVersion) {
		return 0, protocol.MethodInitialize, protocol.Errorf(protocol.ErrUnsupportedProtocolVersion,
			"extension %s answered protocol version %d, which is not one both sides speak (host %v, manifest %v)",
			s.name, res.ProtocolVersion, s.opts.Versions, m.Protocol)
	}
	if !ans.verbatim && !s.sameManifest(&res.Manifest) {
		return 0, protocol.MethodInitialize, protocol.Errorf(protocol.ErrManifestMismatch,
			"extension %s announced a manifest that differs from %s (first difference: %s); the binary and the manifest are from different releases: reinstall the package",
			s.name, protocol.ManifestFile, m.Diff(&res.Manifest))
	}
	if conf == nil || conf.wait() {
		conf = s.sendConfigure(ctx, conn, cparams)
		conf.wait()
	}
	if _, err := s.judgeConfigure(cparams, conf.res, conf.err); err != nil {
		return 0, protocol.MethodConfigure, err
	}
	return res.ProtocolVersion, "", nil
}

// configureSent is a configure request on its way: its answer once wait
// returns.
type configureSent struct {
	pending *jsonrpc.Pending
	res     protocol.ConfigureResult
	err     error
}

// sendConfigure sends configure with params, not waiting for the answer.
func (s *Session) sendConfigure(ctx context.Context, conn *jsonrpc.Conn, params protocol.ConfigureParams) *configureSent {
	c := &configureSent{}
	c.pending, c.err = conn.Start(ctx, protocol.Configure.Name, params, &c.res)
	return c
}

// wait waits for the answer and reports whether the extension refused the
// request as one before initialize (not_initialized), to be sent again.
func (c *configureSent) wait() (again bool) {
	if c.err == nil {
		c.err = c.pending.Wait()
	}
	return protocol.CodeOf(c.err) == protocol.CodeNotInitialized
}

// sameManifest is m.SemanticallyEqual(o) for the package manifest m, with
// m's canonical form computed once per session.
func (s *Session) sameManifest(o *protocol.Manifest) bool {
	a, err1 := s.canon()
	b, err2 := o.Canonical()
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// configure sends the current generation and checks that what the
// extension registers stays in its namespaces.
func (s *Session) configure(ctx context.Context, conn *jsonrpc.Conn) (protocol.ConfigureResult, error) {
	params := s.opts.Configure()
	res, err := jsonrpc.Invoke(ctx, conn, protocol.Configure, params)
	return s.judgeConfigure(params, res, err)
}

// judgeConfigure judges configure's answer to params: an error, or what the
// extension registers outside its namespaces, refuses the configuration.
func (s *Session) judgeConfigure(params protocol.ConfigureParams, res protocol.ConfigureResult, err error) (protocol.ConfigureResult, error) {
	if err != nil {
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

// handshakeError makes one error of a failed handshake: the phase, why it
// ended, its last stderr lines, the command and where its log is.
func (s *Session) handshakeError(ctx context.Context, p *process, conn *jsonrpc.Conn, phase string, err error) error {
	switch protocol.CodeOf(err) {
	case protocol.CodeUnsupportedProtocolVersion, protocol.CodeManifestMismatch, protocol.CodeConfigureRefused:
		return err
	}
	why, _ := s.endReason(ctx, p, conn)
	switch {
	case why != "":
	case ctx.Err() != nil:
		why = "the start was abandoned: " + ctx.Err().Error()
	case errors.Is(err, context.DeadlineExceeded):
		why = fmt.Sprintf("no answer within %s", s.opts.HandshakeTimeout)
	default:
		why = err.Error()
	}
	s.drainStderr(ctx, p)
	var b strings.Builder
	fmt.Fprintf(&b, "extension %s failed its handshake during %s: %s (command %q)", s.name, phase, why, strings.Join(s.argv, " "))
	s.writeTail(&b)
	if path := s.log.Path(); path != "" {
		fmt.Fprintf(&b, "Read %s; an extension", path)
	} else {
		b.WriteString("An extension")
	}
	b.WriteString(" writes only protocol messages to stdout and its logs to stderr")
	return protocol.Errorf(protocol.ErrHandshakeFailed, "%s", b.String())
}

// settle bounds the wait for the second half of a process's end once the
// first is seen: its exit after its stdout closed, or the end of its
// connection after it exited.
const settle = 2 * time.Second

// endReason says why a process's connection ended, and whether the host
// broke it off. A protocol error (a line that is not JSON-RPC, a line over
// the size bound, a write the process did not read in time) is the reason
// whenever the host ended the connection for it, even though the process
// then exits by itself once its stdin closes; the exit status is the reason
// only when the process ended on its own. It is "" when neither is known:
// the process lives and its connection is open, or it closed its streams
// and lives on.
func (s *Session) endReason(ctx context.Context, p *process, conn *jsonrpc.Conn) (why string, protocolError bool) {
	if !p.alive() || p.endedItself() {
		waitAll(ctx, settle, p.exited, conn.Done())
	}
	if err := conn.Err(); err != nil && !p.endedItself() {
		return err.Error(), true
	}
	if !p.alive() {
		return p.exitStatus(), false
	}
	return "", false
}

// drainStderr kills what is left of the process's group and what carries
// its marker, so nothing holds its stderr open, and waits for the last of
// it to reach the log.
func (s *Session) drainStderr(ctx context.Context, p *process) {
	p.killAll(s.opts.Detached)
	waitAll(ctx, settle, p.exited, p.stderrDone)
}

// writeTail appends the last lines of stderr, or says there were none.
func (s *Session) writeTail(b *strings.Builder) {
	if tail := s.log.Tail(); len(tail) > 0 {
		b.WriteString(". Last lines of its stderr:\n    " + strings.Join(tail, "\n    ") + "\n")
	} else {
		b.WriteString(". It wrote nothing to stderr. ")
	}
}

// watch waits for the running process to crash, reports the crash and
// returns the backoff before the restart. It returns zero when ctx ends
// first (Restart or Close), leaving the process to them.
func (s *Session) watch(ctx context.Context, policy *restartPolicy) time.Duration {
	s.mu.Lock()
	p, conn := s.proc, s.conn
	s.mu.Unlock()
	select {
	case <-p.exited:
	case <-conn.Done():
	case <-ctx.Done():
		return 0
	}
	crash := s.crashError(ctx, p, conn)
	s.stopProcess(ctx, p, conn, false)
	s.log.Note("%v", crash)
	s.logger.Warn("extension crashed", "err", crash)
	wait := policy.afterCrash(time.Since(p.started))
	s.mu.Lock()
	s.proc, s.conn = nil, nil
	s.restarts++
	s.setStateLocked(StateRestarting, crash, time.Now().Add(wait))
	s.mu.Unlock()
	return wait
}

// relaunch waits, then starts the process again, backing off after each
// failed start, until one serves (true), ctx ends or a deterministic
// refusal stops the retries (false). The state is already restarting.
func (s *Session) relaunch(ctx context.Context, policy *restartPolicy, wait time.Duration) bool {
	for {
		if !sleep(ctx, wait) {
			return false
		}
		err := s.launch(ctx)
		switch {
		case err == nil:
			return true
		case ctx.Err() != nil:
			return false
		case refused(err):
			s.setState(StateRefused, err)
			return false
		}
		s.logger.Warn("extension start failed; retrying", "err", err)
		wait = policy.afterFailedStart()
		s.restarting(err, wait)
	}
}

// restarting records a failure and when the next launch is due.
func (s *Session) restarting(err error, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStateLocked(StateRestarting, err, time.Now().Add(wait))
}

// restartPolicy is the backoff between restarts: Min after the first crash
// or failed start, doubling with each crash or failed start up to Max, and
// back to Min once a process has stayed up for ResetAfter.
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

// afterFailedStart is the wait before trying again after a start failed.
func (r *restartPolicy) afterFailedStart() time.Duration {
	if r.last == 0 {
		r.last = r.b.Min
	} else {
		r.last = min(r.last*2, r.b.Max)
	}
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

// crashError describes a process that exited or broke the protocol, with
// the last lines of its stderr.
func (s *Session) crashError(ctx context.Context, p *process, conn *jsonrpc.Conn) error {
	uptime := time.Since(p.started).Round(time.Millisecond)
	why, broke := s.endReason(ctx, p, conn)
	var b strings.Builder
	switch {
	case broke:
		fmt.Fprintf(&b, "extension %s broke the protocol after %s and was stopped: %s", s.name, uptime, why)
	case why != "":
		fmt.Fprintf(&b, "extension %s crashed after %s: %s", s.name, uptime, why)
	case p.endedItself():
		fmt.Fprintf(&b, "extension %s closed its stdin or stdout after %s; the process was killed", s.name, uptime)
	default:
		fmt.Fprintf(&b, "extension %s lost its connection after %s; the process was killed", s.name, uptime)
	}
	s.drainStderr(ctx, p)
	s.writeTail(&b)
	if path := s.log.Path(); path != "" {
		fmt.Fprintf(&b, "Its log is %s. ", path)
	}
	switch {
	case broke && conn.Stalled():
		b.WriteString("An extension keeps reading its stdin while it works: the host's messages wait in a pipe that only its reader empties")
	case broke:
		b.WriteString("An extension writes only protocol messages to stdout, one JSON-RPC message per line of at most 16 MiB, and its logs to stderr")
	}
	return protocol.Errorf(protocol.ErrTransport, "%s", strings.TrimSpace(b.String()))
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
