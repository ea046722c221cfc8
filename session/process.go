package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// baselineEnv are the variables every extension process gets from the
// daemon's environment (the B05 baseline). Nothing else reaches it unless
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
	cmd      *exec.Cmd
	pid      int
	stdin    *os.File // ours: the extension reads it
	stdout   *os.File // ours: the extension writes it
	started  time.Time
	exited   chan struct{}
	waitErr  error
	stderrWG chan struct{}
}

// spawn starts argv in dir, in its own process group, with env, its stdout
// and stdin on pipes the caller speaks the protocol over and its stderr
// copied into log. On Linux the process is killed if the daemon dies, so a
// host crash never orphans it.
func spawn(argv []string, dir string, env []string, log io.Writer) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
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
	p := &process{
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		stdin:    inW,
		stdout:   outR,
		started:  time.Now(),
		exited:   make(chan struct{}),
		stderrWG: make(chan struct{}),
	}
	go func() {
		_, _ = io.Copy(log, errR)
		errR.Close()
		close(p.stderrWG)
	}()
	go func() {
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
