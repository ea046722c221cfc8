package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// baselineEnv are the variables every extension process gets from the
// daemon's environment (the baseline). Nothing else reaches it unless
// the operator grants a variable to the package by name.
var baselineEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM"}

// Environment builds an extension's environment: the baseline (with every
// LC_* locale variable) plus the granted names that are set, from environ
// (os.Environ() in the daemon). It returns the environment and the granted
// names that were not set, which the operator sees.
func Environment(environ []string, grants []string) (env []string, missing []string) {
	vals := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			vals[k] = v
		}
	}
	seen := map[string]bool{}
	add := func(k string) bool {
		v, ok := vals[k]
		if !ok || seen[k] {
			return ok
		}
		seen[k] = true
		env = append(env, k+"="+v)
		return true
	}
	for _, k := range baselineEnv {
		add(k)
	}
	var locale []string
	for k := range vals {
		if strings.HasPrefix(k, "LC_") {
			locale = append(locale, k)
		}
	}
	sort.Strings(locale)
	for _, k := range locale {
		add(k)
	}
	if raceEnabled {
		add("GORACE")
	}
	for _, k := range grants {
		if !add(k) {
			missing = append(missing, k)
		}
	}
	return env, missing
}

// process is one run of an extension's command.
type process struct {
	cmd     *exec.Cmd
	pid     int
	marker  string     // its MarkerEnv value, which its descendants inherit
	in      *inWriter  // ours: the extension reads it
	out     *outReader // ours: the extension writes it
	started time.Time
	exited  chan struct{}
	waitErr error
	// stderrDone is closed once the extension's stderr reached its end.
	stderrDone chan struct{}
}

// endedItself reports whether the extension closed its side of the
// protocol streams: it reached the end of its stdout, or a write to its
// stdin found nobody reading. Either means it exited (or closed them) on
// its own, rather than the host breaking the connection off.
func (p *process) endedItself() bool { return p.out.eof.Load() || p.in.broken.Load() }

// outReader is the extension's stdout as its connection reads it; it
// remembers whether the stream reached its end.
type outReader struct {
	f   *os.File
	eof atomic.Bool
}

// Read implements io.Reader.
func (r *outReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if errors.Is(err, io.EOF) {
		r.eof.Store(true)
	}
	return n, err
}

// Close implements io.Closer, so closing the connection closes the pipe.
func (r *outReader) Close() error { return r.f.Close() }

// SetReadDeadline reports that the pipe is one the runtime polls, as the
// connection asks before reading it directly.
func (r *outReader) SetReadDeadline(t time.Time) error { return r.f.SetReadDeadline(t) }

// SyscallConn lends the pipe's descriptor, so the connection reads it with
// the system call made directly, waiting in the poller as Read does. A read
// that finds the end or an error takes nothing, and the connection reads
// through Read, which records the end.
func (r *outReader) SyscallConn() (syscall.RawConn, error) { return r.f.SyscallConn() }

// inWriter is the extension's stdin as its connection writes it; it
// remembers whether a write found the pipe closed at the other end.
type inWriter struct {
	f      *os.File
	broken atomic.Bool
}

// Write implements io.Writer.
func (w *inWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		w.broken.Store(true)
	}
	return n, err
}

// SetWriteDeadline bounds a blocked write, as the connection expects of a
// pipe.
func (w *inWriter) SetWriteDeadline(t time.Time) error { return w.f.SetWriteDeadline(t) }

// SyscallConn lends the pipe's descriptor, so the connection offers each
// frame to the non-blocking pipe once with no deadline (a timer) and sets
// one only when the pipe is full. A raw write that finds the pipe closed
// takes nothing, and the frame goes through Write, which records it.
func (w *inWriter) SyscallConn() (syscall.RawConn, error) { return w.f.SyscallConn() }

// Close implements io.Closer: the extension reads EOF.
func (w *inWriter) Close() error { return w.f.Close() }

// spawn starts argv in dir, in a session and process group of its own,
// with env and the marker, its stdout and stdin on pipes the caller speaks
// the protocol over and its stderr drained into log. On Linux the process
// is killed if the daemon dies, so a host crash never orphans it.
func spawn(argv []string, dir string, env []string, mark string, log *stderrLog) (*process, error) {
	inR, inW, outR, outW, err := protocolPipes()
	if err != nil {
		return nil, err
	}
	errR, errW, err := stderrPipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = markedEnv(env, mark)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = procAttr()
	startErr := cmd.Start()
	// The child holds its ends now; ours would keep the pipes open after it
	// exits and hide its EOF.
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, startErr
	}
	growPipe(inW)
	growPipe(outR)
	p := &process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		marker:     mark,
		in:         &inWriter{f: inW},
		out:        &outReader{f: outR},
		started:    time.Now(),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		awaitStderr(errR)
		log.drain(errR)
		errR.Close()
		close(p.stderrDone)
	}()
	go func() {
		awaitExit(p.pid)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// signalGroup signals the process group (the extension and anything it
// started without leaving the group).
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Signal(sig)
	}
}

// killAll kills the process group and every process that carries this
// launch's marker (or shares a session with one), wherever it went, except
// what keep spares.
func (p *process) killAll(keep func(pid int) bool) {
	p.signalGroup(syscall.SIGKILL)
	reapMarker(p.marker, keep)
}

// alive reports whether the process has not exited.
func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// waitExitCtx waits up to d for the process to exit, or until ctx ends.
func (p *process) waitExitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// waitAll waits until every channel is closed, for at most d, or until ctx
// ends.
func waitAll(ctx context.Context, d time.Duration, chans ...<-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, c := range chans {
		select {
		case <-c:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// exitStatus describes how the process ended.
func (p *process) exitStatus() string {
	if p.alive() {
		return "still running"
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("killed by signal %s", ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if p.waitErr != nil {
		return p.waitErr.Error()
	}
	return "exited with status 0"
}

// resolveCommand turns a manifest command into argv: a host-run command runs
// self (the daemon's own executable); a relative command[0] is inside dir.
func resolveCommand(command []string, name, dir, self string, hostRun bool) ([]string, error) {
	if len(command) == 0 {
		return nil, fmt.Errorf("the manifest has no command")
	}
	if hostRun {
		if self == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("finding the open-conduit executable: %w", err)
			}
			self = exe
		}
		return append([]string{self}, command[1:]...), nil
	}
	argv := append([]string(nil), command...)
	if !filepath.IsAbs(argv[0]) {
		argv[0] = filepath.Join(dir, argv[0])
	}
	return argv, nil
}
