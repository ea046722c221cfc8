package session

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Start launches the first process and runs the handshake (initialize,
// then configure). It returns nil once the extension serves; from then on
// the session supervises it, restarting it with backoff after each crash.
//
// On a deterministic refusal (unsupported_protocol_version,
// manifest_mismatch, kv_downgrade) the state is StateRefused and nothing
// retries. On any other failure (start_failed, handshake_failed,
// configure_refused, …) Start returns that error and keeps retrying in the
// background with the backoff used after a crash (StateRestarting), until
// the extension runs or Close. Start is called once; Restart starts again.
func (s *Session) Start(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.ctx.Err() != nil {
		return s.notRunning(StateStopped, nil, time.Time{})
	}
	if s.started {
		return fmt.Errorf("session: extension %s is already started; use Restart to start it again", s.name)
	}
	return s.start(ctx, true)
}

// Restart is the operator's restart: it stops the running process, if any,
// gracefully (shutdown, close stdin, SIGTERM, SIGKILL to the group), resets
// the backoff and launches again, from any state but stopped (refused and
// failing ones included). It returns nil once the new process serves, or
// the launch's error, with Start's rules: a deterministic refusal is not
// retried, any other failure is retried in the background. Concurrent
// calls are serialized. An operator restart is not a crash: it does not
// count in Status.Restarts.
func (s *Session) Restart(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.ctx.Err() != nil {
		return s.notRunning(StateStopped, nil, time.Time{})
	}
	s.stopLoop()
	ctx, cancel := s.scoped(ctx)
	defer cancel()
	s.mu.Lock()
	p, conn := s.proc, s.conn
	s.proc, s.conn = nil, nil
	s.setStateLocked(StateStarting, nil, time.Time{})
	s.mu.Unlock()
	if p != nil {
		s.log.Note("restarting at the operator's request")
		s.stopProcess(ctx, p, conn, true)
	}
	return s.start(ctx, true)
}

// start runs one launch for Start or Restart (op held). On success the
// background loop supervises the process; on a failure other than a
// refusal it retries in the background when retry is set.
func (s *Session) start(ctx context.Context, retry bool) error {
	s.started = true
	ctx, cancel := s.scoped(ctx)
	defer cancel()
	policy := restartPolicy{b: s.opts.Backoff}
	err := s.launch(ctx)
	switch {
	case s.ctx.Err() != nil:
		// Close is under way; it stops whatever the launch left running
		// and reports the session stopped.
		if err == nil {
			err = s.notRunning(StateStopped, nil, time.Time{})
		}
	case err == nil:
		s.supervise(policy, 0)
	case refused(err):
		s.setState(StateRefused, err)
	case retry:
		wait := policy.afterFailedStart()
		s.restarting(err, wait)
		s.supervise(policy, wait)
	default:
		// The caller closes the session: nothing retries.
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
	}
	return err
}

// scoped derives a context from ctx that the session's end cancels too.
func (s *Session) scoped(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// loop is one run of the background supervision: it watches the running
// process and restarts it, or retries a failed start. Restart and Close
// end it and wait for it before they touch the process.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// supervise starts the background loop (op held). With wait zero it first
// watches the running process; otherwise it retries a start that failed,
// after wait (the caller has recorded the failure).
func (s *Session) supervise(policy restartPolicy, wait time.Duration) {
	ctx, cancel := context.WithCancel(s.ctx)
	l := &loop{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.loop = l
	s.mu.Unlock()
	go func() {
		defer close(l.done)
		defer cancel()
		for {
			if wait == 0 {
				if wait = s.watch(ctx, &policy); wait == 0 {
					return
				}
			}
			if !s.relaunch(ctx, &policy, wait) {
				return
			}
			wait = 0
		}
	}()
}

// stopLoop ends the background loop, if one runs, and waits for it (op
// held), so the process it may have just launched is the session's own.
func (s *Session) stopLoop() {
	s.mu.Lock()
	l := s.loop
	s.loop = nil
	s.mu.Unlock()
	if l != nil {
		l.cancel()
		<-l.done
	}
}

// Close stops the extension: shutdown, then its stdin is closed, then
// SIGTERM after a grace period, then SIGKILL to its process group; when
// ctx ends, the steps left are skipped and the group is killed at once. A
// launch, a backoff sleep or a Restart in progress ends at once. Nothing
// the extension started is left behind: neither what stayed in its group
// nor what carries its marker (Reap), except work Options.Detached spares.
func (s *Session) Close(ctx context.Context) error {
	s.cancel()
	s.op.Lock()
	defer s.op.Unlock()
	s.stopLoop()
	s.mu.Lock()
	p, conn, stopped := s.proc, s.conn, s.state == StateStopped
	s.proc, s.conn = nil, nil
	if !stopped {
		// Stopped before the process is gone, so no caller sees a running
		// session without its connection.
		s.setStateLocked(StateStopped, nil, time.Time{})
	}
	s.mu.Unlock()
	if stopped {
		return nil
	}
	if p != nil {
		s.stopProcess(ctx, p, conn, true)
	}
	return s.log.Close()
}

// stopProcess ends one process: politely when graceful, each step bounded
// by the grace period and cut short when ctx ends, then by force.
func (s *Session) stopProcess(ctx context.Context, p *process, conn *jsonrpc.Conn, graceful bool) {
	grace := s.opts.ShutdownGrace
	if graceful && p.alive() && conn != nil && ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, grace)
		if _, err := jsonrpc.Invoke(sctx, conn, protocol.Shutdown, protocol.ShutdownParams{}); err != nil {
			s.logger.Debug("shutdown not answered", "err", err)
		}
		cancel()
		_ = conn.CloseWrite()
		if !p.waitExitCtx(ctx, grace) && ctx.Err() == nil {
			s.log.Note("did not exit within %s of stdin closing; sending SIGTERM", grace)
			p.signalGroup(syscall.SIGTERM)
			if !p.waitExitCtx(ctx, grace) && ctx.Err() == nil {
				s.log.Note("did not exit within %s of SIGTERM; sending SIGKILL", grace)
			}
		}
	}
	p.signalGroup(syscall.SIGKILL)
	p.waitExit(grace)
	if conn != nil {
		_ = conn.Close()
	}
	// Whatever else the extension started goes too: what is left in its
	// group, and what carries its marker wherever it went.
	p.killAll(s.opts.Detached)
}
