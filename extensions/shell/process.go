package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/proc"
)

// Signals the executor sends, named so the non-Linux build compiles too.
const (
	sigInt  = syscall.SIGINT
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// wrapper leads each attempt's process group: it runs the command under the
// configured shell and writes its exit status to the exit file. A process
// that is not our child (one adopted after a restart) cannot be waited for,
// so its status must be recorded by something that outlives us; a POSIX
// shell does that with no helper binary to find or keep in step. Its traps
// are no-ops, not ignores: the command (a new program) gets the default
// actions back, and the wrapper, which defers a trap until the command it
// waits for ends, lives on to record the status of a command that a SIGINT
// or SIGTERM to the group ended. Arguments: $1 the shell, $2 the command,
// $3 the exit file.
const wrapper = `trap : HUP INT TERM
"$1" -c "$2"
code=$?
echo "$code" > "$3"
exit "$code"`

// wrapperShell runs the wrapper.
const wrapperShell = "/bin/sh"

// run is one execution this process started or adopted.
type run struct {
	rec       Recovery
	execution string
	timeout   int
	host      *sdk.Host

	mu       sync.Mutex
	epoch    uint64
	stopping string // why the executor is ending it ("stopped", "timed out …")

	// exited is closed once our own child is reaped (state its status);
	// nil for an adopted process, which is watched through /proc.
	exited chan struct{}
	state  *os.ProcessState

	done   chan struct{} // closed once the process ended and its outputs are committed
	result sdk.ExecutorWaitResult

	outs []*output
}

// output is one of the command's outputs: its file and the artifact it is
// streamed into (nil once the host refuses it: the file still holds it).
type output struct {
	name string
	path string
	f    *os.File
	w    *sdk.ArtifactWriter
	off  int64
}

func (r *run) currentEpoch() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epoch
}

func (r *run) setEpoch(epoch uint64) {
	r.mu.Lock()
	r.epoch = epoch
	r.mu.Unlock()
}

// start lays out an attempt's run directory and starts its wrapper in a
// session of its own.
func start(host *sdk.Host, dir string, c Config, p sdk.ExecutorRunParams) (*run, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, sdk.Errorf(sdk.ErrInternal, "the runs directory: %v", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, sdk.Errorf(sdk.ErrConflict, "execution %s was started before by another process of the package: recover it", p.Execution)
		}
		return nil, sdk.Errorf(sdk.ErrInternal, "execution %s's run directory: %v", p.Execution, err)
	}
	rec := Recovery{
		Dir: dir, Stdin: dir + "/stdin", Stdout: dir + "/stdout", Stderr: dir + "/stderr",
		Exit: dir + "/exit", Inputs: dir + "/inputs.json",
	}
	fail := func(what string, err error) (*run, error) {
		os.RemoveAll(dir)
		return nil, sdk.Errorf(sdk.ErrInternal, "execution %s: %s: %v", p.Execution, what, err)
	}
	inputs, err := json.Marshal(Inputs{Execution: p.Execution, Attempt: p.Attempt, Work: p.Work, Inputs: p.Inputs, Woke: p.Woke, Context: p.Context})
	if err != nil {
		return fail("its inputs", err)
	}
	if err := os.WriteFile(rec.Inputs, inputs, 0o600); err != nil {
		return fail("its inputs file", err)
	}
	if err := syscall.Mkfifo(rec.Stdin, 0o600); err != nil {
		return fail("its stdin fifo", err)
	}
	// Read-write, so the open does not wait for a writer, the command never
	// reads end of file, and inject always finds a reader while it lives.
	stdin, err := os.OpenFile(rec.Stdin, os.O_RDWR, 0)
	if err != nil {
		return fail("its stdin fifo", err)
	}
	defer stdin.Close()
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, path := range []string{rec.Stdout, rec.Stderr} {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return fail("its output files", err)
		}
		files = append(files, f)
	}

	rn := &run{execution: p.Execution, timeout: c.TimeoutSeconds, host: host, epoch: p.Epoch, exited: make(chan struct{}), done: make(chan struct{})}
	rec.Artifacts = rn.openArtifacts(host, p.Execution, rec)

	cmd := exec.Command(wrapperShell, "-c", wrapper, "open-conduit-shell", c.Shell, c.Command, rec.Exit)
	cmd.Dir = dir
	cmd.Env = environ(p, rec.Inputs)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		rn.abortArtifacts()
		return fail("starting "+wrapperShell, err)
	}
	// Our child is not reaped before cmd.Wait, so its /proc entry is there
	// even if it already ended.
	info, err := proc.Stat(cmd.Process.Pid)
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		rn.abortArtifacts()
		return fail("reading its start time", fmt.Errorf("/proc/%d/stat: %w", cmd.Process.Pid, err))
	}
	rec.PID, rec.StartTicks, rec.Started = cmd.Process.Pid, info.StartTicks, time.Now().UTC()
	if c.TimeoutSeconds > 0 {
		rec.Deadline = rec.Started.Add(time.Duration(c.TimeoutSeconds) * time.Second)
	}
	rn.rec = rec
	go func() {
		_ = cmd.Wait()
		rn.mu.Lock()
		rn.state = cmd.ProcessState
		rn.mu.Unlock()
		close(rn.exited)
	}()
	return rn, nil
}

// adopt takes over an execution an earlier process of the package started:
// its old artifacts are abandoned, and new ones take the output files from
// their first byte, so nothing written while no one streamed is lost.
func adopt(host *sdk.Host, rec Recovery, execution string, epoch uint64) *run {
	rn := &run{execution: execution, host: host, epoch: epoch, done: make(chan struct{})}
	ctx := context.Background()
	for name, id := range rec.Artifacts {
		if err := host.Call(ctx, protocol.MethodArtifactAbort, protocol.ArtifactAbortParams{Artifact: id}, nil); err != nil {
			logf("shell: execution %s: abandoning its earlier %s artifact: %v", execution, name, err)
		}
	}
	rec.Artifacts = rn.openArtifacts(host, execution, rec)
	rn.rec = rec
	return rn
}

// openArtifacts opens the execution's output artifacts. A host that
// refuses them (one that keeps no artifacts) leaves the outputs in their
// files only: that is no reason to fail the attempt.
func (r *run) openArtifacts(host *sdk.Host, execution string, rec Recovery) map[string]string {
	ids := map[string]string{}
	for _, o := range []struct{ name, path string }{{StdoutArtifact, rec.Stdout}, {StderrArtifact, rec.Stderr}} {
		out := &output{name: o.name, path: o.path}
		w, err := host.Artifact(context.Background(), sdk.ArtifactCreateParams{Execution: execution, Name: o.name, MediaType: "text/plain"})
		if err != nil {
			logf("shell: execution %s: its %s stays in %s only: the host refused an artifact: %v", execution, o.name, o.path, err)
		} else {
			out.w = w
			ids[o.name] = w.ID()
		}
		r.outs = append(r.outs, out)
	}
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// abortArtifacts abandons the artifacts of an attempt that did not start.
func (r *run) abortArtifacts() {
	for _, o := range r.outs {
		if o.w != nil {
			_ = o.w.Abort()
			o.w = nil
		}
	}
}

// environ is the command's environment: the package's own, the toolbelt
// variables the params name, the host's Env for the run (which wins), and
// the inputs file.
func environ(p sdk.ExecutorRunParams, inputs string) []string {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	set(protocol.EnvWork, p.Work.ID)
	set(protocol.EnvExecution, p.Execution)
	if p.Toolbelt.Socket != "" {
		set(protocol.EnvToolbelt, p.Toolbelt.Socket)
	}
	if p.Toolbelt.Token != "" {
		set(protocol.EnvToken, p.Toolbelt.Token)
	}
	for k, v := range p.Env {
		set(k, v)
	}
	set(EnvInputs, inputs)
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

// alive says the execution's wrapper still runs: that pid, with that start
// time, and not a zombie.
func (r *run) alive() bool {
	info, err := proc.Stat(r.rec.PID)
	return err == nil && info.StartTicks == r.rec.StartTicks && !info.Exited()
}

// members lists the live processes of the execution's group that started
// no earlier than its wrapper. /proc unreadable lists none: the group's
// signals then go to the wrapper alone, as alive() allows.
func (r *run) members() []int {
	m, _ := proc.GroupMembers(r.rec.PID, r.rec.StartTicks)
	return m
}

// ended says the wrapper has ended.
func (r *run) ended() bool {
	if r.exited != nil {
		select {
		case <-r.exited:
			return true
		default:
			return false
		}
	}
	return !r.alive()
}

// watch streams the outputs while the process runs, ends it at its
// deadline, and settles the execution when it ends.
func (r *run) watch() {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	timingOut := false
	for {
		ended := r.ended()
		r.pump()
		if ended {
			r.finish()
			return
		}
		if !timingOut && !r.rec.Deadline.IsZero() && time.Now().After(r.rec.Deadline) {
			timingOut = true
			go r.terminate(context.Background(), fmt.Sprintf("timed out after %d seconds", int(r.rec.Deadline.Sub(r.rec.Started).Seconds())))
		}
		select {
		case <-r.exited:
		case <-t.C:
		}
	}
}

// pump streams what the output files gained since the last pump.
func (r *run) pump() {
	buf := make([]byte, protocol.MaxChunkBytes)
	for _, o := range r.outs {
		if o.f == nil {
			f, err := os.Open(o.path)
			if err != nil {
				continue
			}
			o.f = f
		}
		for {
			n, err := o.f.ReadAt(buf, o.off)
			if n > 0 {
				if o.w != nil {
					if _, werr := o.w.Write(buf[:n]); werr != nil {
						logf("shell: execution %s: streaming its %s stopped, it stays in %s: %v", r.execution, o.name, o.path, werr)
						o.w = nil
					}
				}
				o.off += int64(n)
			}
			if err != nil || n == 0 {
				if err != nil && !errors.Is(err, io.EOF) {
					logf("shell: execution %s: reading its %s: %v", r.execution, o.name, err)
				}
				break
			}
		}
	}
}

// finish commits the outputs and settles the execution from the exit
// status its wrapper recorded.
func (r *run) finish() {
	for _, o := range r.outs {
		if o.w != nil {
			if _, err := o.w.Commit(); err != nil {
				logf("shell: execution %s: committing its %s: %v", r.execution, o.name, err)
			}
		}
		if o.f != nil {
			o.f.Close()
		}
	}
	r.mu.Lock()
	why, state := r.stopping, r.state
	r.mu.Unlock()
	if why != "" {
		// The executor is ending the group: the wrapper can end before the
		// rest of it, and the execution has not stopped until all of it has.
		if err := r.waitGone(context.Background(), StopGrace+killWait); err != nil {
			logf("shell: execution %s: its process group outlived the stop: %v", r.execution, err)
		}
	}
	res := sdk.ExecutorWaitResult{State: sdk.OutcomeFailed}
	if b, err := os.ReadFile(r.rec.Exit); err == nil {
		if code, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			res.ExitCode = &code
		}
	}
	switch {
	case res.ExitCode != nil && *res.ExitCode == 0 && why == "":
		res.State = sdk.OutcomeCompleted
	case res.ExitCode != nil:
		res.Reason = "exit status " + strconv.Itoa(*res.ExitCode)
		if why != "" {
			res.Reason = why + ", " + res.Reason
		}
	case why != "":
		res.Reason = why
	case state != nil:
		res.Reason = "the command ended without recording its exit status: " + state.String()
	default:
		res.Reason = "the command ended without recording its exit status (killed?)"
	}
	r.result = res
	close(r.done)
}

// signal sends sig to the execution's process group: at once to the group
// while its leader is the process the metadata names (its number cannot be
// another group's then), else to each member found by the group's number
// and start time.
func (r *run) signal(sig syscall.Signal) {
	if r.alive() {
		_ = syscall.Kill(-r.rec.PID, sig)
		return
	}
	for _, pid := range r.members() {
		_ = syscall.Kill(pid, sig)
	}
}

// gone says no process of the execution's group runs.
func (r *run) gone() bool {
	return !r.alive() && len(r.members()) == 0
}

// terminate ends the execution's process group, SIGTERM then SIGKILL after
// StopGrace, and answers the evidence: which check found the group empty.
// why is what the execution's outcome says ended it.
func (r *run) terminate(ctx context.Context, why string) (sdk.ExecutorStopResult, error) {
	r.mu.Lock()
	if r.stopping == "" {
		r.stopping = why
	}
	r.mu.Unlock()
	group := fmt.Sprintf("process group %d (leader started at tick %d)", r.rec.PID, r.rec.StartTicks)
	if r.gone() {
		return sdk.ExecutorStopResult{Stopped: true, Evidence: "no process of " + group + " was running: /proc lists none"}, nil
	}
	r.signal(sigTerm)
	if err := r.waitGone(ctx, StopGrace); err == nil {
		return sdk.ExecutorStopResult{Stopped: true, Evidence: "SIGTERM to " + group + "; then /proc listed no process of it"}, nil
	} else if ctx.Err() != nil {
		return sdk.ExecutorStopResult{}, err
	}
	r.signal(sigKill)
	if err := r.waitGone(ctx, killWait); err != nil {
		if ctx.Err() != nil {
			return sdk.ExecutorStopResult{}, err
		}
		return sdk.ExecutorStopResult{Stopped: false, Evidence: fmt.Sprintf("SIGKILL to %s; /proc still lists %v", group, r.members())}, nil
	}
	return sdk.ExecutorStopResult{Stopped: true, Evidence: fmt.Sprintf("SIGTERM to %s, SIGKILL after %s; then /proc listed no process of it", group, StopGrace)}, nil
}

// killWait bounds how long the group may take to vanish after SIGKILL.
const killWait = 30 * time.Second

// waitGone waits until no process of the group runs, for at most d.
func (r *run) waitGone(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !r.gone() {
		if time.Now().After(end) {
			return fmt.Errorf("still running after %s", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// injectWait bounds how long a line waits for room in the command's stdin.
const injectWait = 5 * time.Second

// writeLine writes text and a newline to the command's stdin. The fifo is
// opened without blocking: with no reader (the command is gone) the open
// fails at once, and a command that does not read its stdin fills it, so a
// write that finds no room in time is refused rather than left hanging.
func (r *run) writeLine(text string) error {
	if r.ended() {
		return sdk.Errorf(sdk.ErrNotAccepting, "execution %s has ended", r.execution)
	}
	f, err := os.OpenFile(r.rec.Stdin, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return sdk.Errorf(sdk.ErrNotAccepting, "execution %s's stdin has no reader: the command has ended", r.execution)
		}
		return sdk.Errorf(sdk.ErrNotAccepting, "execution %s's stdin: %v", r.execution, err)
	}
	defer f.Close()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_ = f.SetWriteDeadline(time.Now().Add(injectWait))
	if _, err := io.WriteString(f, text); err != nil {
		return sdk.Errorf(sdk.ErrNotAccepting, "execution %s's stdin took no input for %s: the command is not reading it (%v)", r.execution, injectWait, err)
	}
	return nil
}
