// Package runner is the example executor: detached jobs with inject,
// interrupt, stop and forget. A binding of its executor names a job, a
// command and its arguments; each execution runs the job as a process of
// its own session and process group, detached from the package, so it
// outlives a package crash or a daemon restart:
//
//   - its stdin is a fifo in the package's state directory, which inject
//     writes one line to (the fifo stays open, so the job never reads end
//     of input: a job that reads is one that waits for injected lines);
//   - its stdout and stderr go to a file beside it, and its exit status to
//     another, written by the small sh wrapper the job runs under, so a
//     later process of the package learns how an adopted job ended;
//   - its recovery metadata is the wrapper's pid, its start time (field 22
//     of /proc/PID/stat, with the boot ID) and those paths, persisted with
//     the host (Host.PersistRecovery) and returned by executor.run.
//
// executor.recover re-adopts a job only when the pid still names a process
// with the recorded start time; a job that ended while no process watched
// it is adopted as ended when its exit status was written; anything else is
// not_adoptable. Interrupt sends SIGINT to the job's group. Stop sends
// SIGTERM, then SIGKILL after the binding's grace, and answers stopped
// with the evidence: no process of the group is left (read from /proc), or
// the pid names another process now. Forget drops a settled execution's
// bookkeeping and its files. Wait answers completed on exit status 0,
// otherwise failed with the exit status (130 after an interrupt the job
// did not trap).
//
// The open-conduit binary serves it (open-conduit extension-run runner);
// it is built on the SDK alone. It needs Linux's /proc to identify its
// jobs.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/proc"
)

// Name is the package's name, and its executor's.
const Name = "runner"

// ExecutorName is the one executor's name, what a binding's executor says.
const ExecutorName = Name

// Bounds.
const (
	// DefaultStopGrace is how long stop waits after SIGTERM before SIGKILL
	// when the binding says nothing.
	DefaultStopGrace = 10 * time.Second
	// MaxStopGraceSeconds bounds a binding's stop_grace_seconds.
	MaxStopGraceSeconds = 300
	// MaxInjectBytes bounds one injected line, newline included: a write
	// of at most this many bytes to a pipe is never interleaved with
	// another's.
	MaxInjectBytes = 4096
	// killWait is how long stop waits for the group to go after SIGKILL.
	killWait = 10 * time.Second
	// pollEvery is how often the package looks at a process it cannot
	// wait for (an adopted job, a group being stopped).
	pollEvery = 50 * time.Millisecond
)

// wrapper runs the job ("$@") and writes its exit status to the file $1.
// It catches SIGINT, so an interrupt ends the job but not the wrapper,
// which still writes the status (130 for a job SIGINT killed); the job
// itself gets SIGINT's default action back, as a caught signal is reset
// in a child.
const wrapper = `status=$1; shift; trap : INT; "$@"; echo $? >"$status"`

// Config is a binding's config for the runner executor: the job.
type Config struct {
	Command          string   `json:"command" doc:"The program to run: a path, or a name looked up on PATH."`
	Args             []string `json:"args,omitempty" doc:"Its arguments."`
	StopGraceSeconds *int     `json:"stop_grace_seconds,omitempty" doc:"How long stop waits after SIGTERM before SIGKILL (default 10, at most 300)."`
}

// grace is the stop grace the config says.
func (c Config) grace() time.Duration {
	if c.StopGraceSeconds == nil {
		return DefaultStopGrace
	}
	return time.Duration(*c.StopGraceSeconds) * time.Second
}

// strict refuses a member the config type does not have.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// DecodeConfig reads a binding's config, refusing what runner cannot run
// with protocol.ErrInvalid naming the field to change.
func DecodeConfig(raw jsontext.Value) (Config, error) {
	var c Config
	if len(raw) == 0 {
		return c, sdk.Errorf(sdk.ErrInvalid, "a runner binding needs a config naming its job: {\"command\": \"...\", \"args\": [...]}")
	}
	if err := json.Unmarshal(raw, &c, strict); err != nil {
		return c, sdk.Errorf(sdk.ErrInvalid, "runner binding config: %v; it takes command, args and stop_grace_seconds", err)
	}
	switch {
	case strings.TrimSpace(c.Command) == "":
		return c, sdk.Errorf(sdk.ErrInvalid, "runner binding config: command is empty; name the program the job runs")
	case strings.ContainsRune(c.Command, 0) || slices.ContainsFunc(c.Args, func(a string) bool { return strings.ContainsRune(a, 0) }):
		return c, sdk.Errorf(sdk.ErrInvalid, "runner binding config: command and args cannot hold a NUL byte")
	case c.StopGraceSeconds != nil && (*c.StopGraceSeconds < 0 || *c.StopGraceSeconds > MaxStopGraceSeconds):
		return c, sdk.Errorf(sdk.ErrInvalid, "runner binding config: stop_grace_seconds is %d; use 0 to %d", *c.StopGraceSeconds, MaxStopGraceSeconds)
	}
	return c, nil
}

// Recovery is an execution's recovery metadata: enough for a later
// process of the package to tell whether the job still runs, and to reach
// its files.
type Recovery struct {
	// PID is the wrapper's, the leader of the job's session and process
	// group (so also the group's ID).
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/PID/stat, in clock ticks since boot;
	// BootID is the boot it counts from.
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id,omitempty"`
	// Dir holds Input (the fifo), Output (stdout and stderr) and Status
	// (the exit status, once the job ended).
	Dir    string `json:"dir"`
	Input  string `json:"input"`
	Output string `json:"output"`
	Status string `json:"status"`
	// StopGraceMS is the binding's stop grace, so a stop after a restart
	// keeps it.
	StopGraceMS int64 `json:"stop_grace_ms"`
}

// check refuses metadata runner would not have written.
func (rec Recovery) check() error {
	switch {
	case rec.PID <= 1 || rec.StartTime == 0:
		return fmt.Errorf("it names pid %d started at %d", rec.PID, rec.StartTime)
	case !filepath.IsAbs(rec.Dir) || filepath.Clean(rec.Dir) != rec.Dir:
		return fmt.Errorf("its directory %q is not a clean absolute path", rec.Dir)
	case rec.StopGraceMS < 0:
		return fmt.Errorf("its stop grace is negative")
	}
	for _, p := range []string{rec.Input, rec.Output, rec.Status} {
		if filepath.Dir(p) != rec.Dir {
			return fmt.Errorf("its file %q is not in its directory %q", p, rec.Dir)
		}
	}
	return nil
}

// identify reports whether the job's process still runs: the pid names a
// process that started when the job did, in this boot, and has not
// exited. why says otherwise.
func (rec Recovery) identify() (running bool, why string, err error) {
	if rec.BootID != "" && rec.BootID != proc.BootID() {
		return false, "the machine has restarted since the job started", nil
	}
	p, err := proc.Stat(rec.PID)
	switch {
	case errors.Is(err, proc.ErrNoProcess):
		return false, fmt.Sprintf("pid %d is gone", rec.PID), nil
	case err != nil:
		return false, "", err
	case p.StartTicks != rec.StartTime:
		return false, fmt.Sprintf("pid %d is another process now (start time %d, the job's %d)", rec.PID, p.StartTicks, rec.StartTime), nil
	case p.Exited():
		return false, fmt.Sprintf("pid %d has exited", rec.PID), nil
	}
	return true, "", nil
}

// exitStatus is the status the wrapper wrote; ok false means it wrote
// none (the job runs, or the wrapper was killed).
func (rec Recovery) exitStatus() (code int, ok bool) {
	raw, err := os.ReadFile(rec.Status)
	if err != nil {
		return 0, false
	}
	code, err = strconv.Atoi(strings.TrimSpace(string(raw)))
	return code, err == nil
}

// job is one execution this process watches.
type job struct {
	rec Recovery
	// done is closed once the job's process has exited.
	done chan struct{}
	// state is the wrapper's exit, for a job this process started; set
	// before done closes.
	state *os.ProcessState
	// epoch is the lease the latest run or recover named; under runner.mu.
	epoch uint64
}

// ended reports whether the job's process has exited.
func (j *job) ended() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// result is how the ended job settled.
func (j *job) result() sdk.ExecutorWaitResult {
	if code, ok := j.rec.exitStatus(); ok {
		if code == 0 {
			return sdk.ExecutorWaitResult{State: sdk.OutcomeCompleted, ExitCode: &code}
		}
		return sdk.ExecutorWaitResult{State: sdk.OutcomeFailed, Reason: fmt.Sprintf("the job exited with status %d", code), ExitCode: &code}
	}
	reason := "the job ended without writing its exit status: it was killed"
	if j.state != nil {
		if ws, ok := j.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			reason = fmt.Sprintf("the job was killed by %v", ws.Signal())
		}
	}
	return sdk.ExecutorWaitResult{State: sdk.OutcomeFailed, Reason: reason}
}

// watch closes done once the adopted job's process has exited, looking
// at /proc, since only its parent could wait for it.
func (j *job) watch() {
	defer close(j.done)
	for {
		if running, _, err := j.rec.identify(); err != nil || !running {
			return
		}
		time.Sleep(pollEvery)
	}
}

// runner is the package's state: the executions this process watches.
type runner struct {
	mu   sync.Mutex
	jobs map[string]*job
}

// Extension builds the runner extension.
func Extension() *sdk.Extension {
	rn := &runner{jobs: map[string]*job{}}
	x := sdk.New(Name, sdk.Version("0.1.0"), sdk.HostRun(),
		sdk.Title("Runner"), sdk.Summary("runs each execution's job as a detached process, with inject, interrupt, stop and forget"),
		sdk.Certification(Certification)).
		Executor(ExecutorName, sdk.ExecutorFuncs{
			Run: rn.run, Wait: rn.wait, Recover: rn.recover, Stop: rn.stop, Interrupt: rn.interrupt, Inject: rn.inject,
			Forget: rn.forget,
		}, sdk.JobsPool(), sdk.ExecutorToolbelt("cli"), sdk.ExecutorFields(
			sdk.Field{Name: "command", Required: true, Help: "The program to run: a path, or a name looked up on PATH."},
			sdk.Field{Name: "args", Help: "Its arguments, a list of strings."},
			sdk.Field{Name: "stop_grace_seconds", Default: "10", Help: "How long stop waits after SIGTERM before SIGKILL, at most 300."},
		)).
		Validate(validate)
	return x
}

// validate checks a binding's config for the executor.
func validate(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
	if p.Kind != protocol.ValidateExecutor {
		return sdk.ValidateResult{}, nil
	}
	_, err := DecodeConfig(p.Config)
	return sdk.ValidateResult{}, err
}

// checkExecutionID refuses an ID that cannot name a directory of its own.
func checkExecutionID(id string) error {
	if id == "" || id == "." || id == ".." || len(id) > 200 || strings.ContainsAny(id, "/\\\x00") {
		return sdk.Errorf(sdk.ErrInvalid, "execution ID %q cannot name a job directory: the host's IDs are short and hold no slash", id)
	}
	return nil
}

// jobDir is the directory of execution id's job under the state dir.
func jobDir(r *sdk.Request, id string) (string, error) {
	state := r.Host.StateDir()
	if state == "" {
		return "", sdk.Errorf(sdk.ErrUnsupported, "the host named no state directory, where runner keeps its jobs' files")
	}
	return filepath.Join(state, "jobs", id), nil
}

// lookup is the job of ref this process watches, refusing a superseded
// lease.
func (rn *runner) lookup(ref sdk.ExecutionRef) (*job, error) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	j := rn.jobs[ref.Execution]
	switch {
	case j == nil:
		return nil, sdk.Errorf(sdk.ErrNotFound, "runner watches no execution %s in this process: recover it first", ref.Execution)
	case ref.Epoch < j.epoch:
		return nil, sdk.Errorf(sdk.ErrConflict, "execution %s's lease epoch %d is superseded by %d", ref.Execution, ref.Epoch, j.epoch)
	}
	return j, nil
}

func (rn *runner) run(ctx context.Context, r *sdk.Request, p sdk.ExecutorRunParams) (sdk.ExecutorRunResult, error) {
	cfg, err := DecodeConfig(p.Binding.Config)
	if err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	if err := checkExecutionID(p.Execution); err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	dir, err := jobDir(r, p.Execution)
	if err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	j, err := start(dir, p, cfg)
	if err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	raw, err := json.Marshal(j.rec)
	if err == nil {
		ref := sdk.ExecutionRef{Execution: p.Execution, Epoch: p.Epoch, Executor: p.Executor}
		// A host that does not serve persist_recovery keeps the metadata
		// the result carries; any other refusal means the host no longer
		// serves this attempt, so the job must not run on.
		if err = r.Host.PersistRecovery(ctx, ref, jsontext.Value(raw), sdk.DetachedProcess(j.rec.PID, j.rec.StartTime)); errors.Is(err, sdk.ErrUnsupported) {
			err = nil
		}
	}
	if err != nil {
		_ = syscall.Kill(-j.rec.PID, syscall.SIGKILL)
		<-j.done
		_ = os.RemoveAll(dir)
		return sdk.ExecutorRunResult{}, err
	}
	rn.mu.Lock()
	rn.jobs[p.Execution] = j
	rn.mu.Unlock()
	return sdk.ExecutorRunResult{Recovery: raw}, nil
}

// start starts the job of cfg in dir, a new directory: the fifo, the
// output file, the wrapper in a session of its own.
func start(dir string, p sdk.ExecutorRunParams, cfg Config) (*job, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("runner: make the jobs directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, sdk.Errorf(sdk.ErrConflict, "execution %s already has a job: an execution runs once; recover it instead", p.Execution)
		}
		return nil, fmt.Errorf("runner: make the job directory: %w", err)
	}
	started := false
	defer func() {
		if !started {
			_ = os.RemoveAll(dir)
		}
	}()
	rec := Recovery{Dir: dir, Input: filepath.Join(dir, "input"), Output: filepath.Join(dir, "output"),
		Status: filepath.Join(dir, "status"), StopGraceMS: cfg.grace().Milliseconds(), BootID: proc.BootID()}
	if err := syscall.Mkfifo(rec.Input, 0o600); err != nil {
		return nil, fmt.Errorf("runner: make the job's input fifo: %w", err)
	}
	// Read-write, so the open does not wait for a writer and the job
	// never sees the end of its input between injected lines.
	in, err := os.OpenFile(rec.Input, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("runner: open the job's input fifo: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(rec.Output, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("runner: create the job's output file: %w", err)
	}
	defer out.Close()

	cmd := exec.Command("/bin/sh", append([]string{"-c", wrapper, "runner-job", rec.Status, cfg.Command}, cfg.Args...)...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, in, out, out
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		cmd.Env = append(cmd.Env, k+"="+p.Env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runner: start the job: %w", err)
	}
	rec.PID = cmd.Process.Pid
	// Unreaped until Wait below, so even a job that exits at once still
	// has its /proc entry here.
	info, err := proc.Stat(rec.PID)
	if err != nil {
		_ = syscall.Kill(-rec.PID, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("runner: identify the job's process %d: %w", rec.PID, err)
	}
	rec.StartTime = info.StartTicks
	j := &job{rec: rec, done: make(chan struct{}), epoch: p.Epoch}
	go func() {
		_ = cmd.Wait()
		j.state = cmd.ProcessState
		close(j.done)
	}()
	// A copy beside the files, so stop finds the job even when the host
	// never got the metadata.
	if raw, err := json.Marshal(rec); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "recovery.json"), raw, 0o600)
	}
	started = true
	return j, nil
}

func (rn *runner) wait(ctx context.Context, _ *sdk.Request, ref sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
	j, err := rn.lookup(ref)
	if err != nil {
		return sdk.ExecutorWaitResult{}, err
	}
	select {
	case <-j.done:
		return j.result(), nil
	case <-ctx.Done():
		return sdk.ExecutorWaitResult{}, ctx.Err()
	}
}

func (rn *runner) recover(_ context.Context, _ *sdk.Request, p sdk.ExecutorRecoverParams) error {
	if err := checkExecutionID(p.Execution); err != nil {
		return err
	}
	var rec Recovery
	if err := json.Unmarshal(p.Recovery, &rec); err != nil {
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s's recovery metadata is not runner's: %v", p.Execution, err)
	}
	if err := rec.check(); err != nil {
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s's recovery metadata is not runner's: %v", p.Execution, err)
	}
	rn.mu.Lock()
	if j := rn.jobs[p.Execution]; j != nil {
		// This process still watches it: the new lease supersedes.
		j.epoch = max(j.epoch, p.Epoch)
		rn.mu.Unlock()
		return nil
	}
	rn.mu.Unlock()
	running, why, err := rec.identify()
	if err != nil {
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s: cannot read its process %d: %v", p.Execution, rec.PID, err)
	}
	j := &job{rec: rec, done: make(chan struct{}), epoch: p.Epoch}
	switch _, ended := rec.exitStatus(); {
	case running:
		go j.watch()
	case ended:
		// It ended while nothing watched it, and said how.
		close(j.done)
	default:
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s's job is not running and left no exit status: %s", p.Execution, why)
	}
	rn.mu.Lock()
	if other := rn.jobs[p.Execution]; other != nil {
		other.epoch = max(other.epoch, p.Epoch)
	} else {
		rn.jobs[p.Execution] = j
	}
	rn.mu.Unlock()
	return nil
}

func (rn *runner) interrupt(_ context.Context, _ *sdk.Request, ref sdk.ExecutionRef) error {
	j, err := rn.lookup(ref)
	if err != nil {
		return err
	}
	return j.signal(ref.Execution, syscall.SIGINT)
}

// signal sends sig to the job's group, once the job is seen running.
func (j *job) signal(id string, sig syscall.Signal) error {
	running, why, err := j.rec.identify()
	switch {
	case err != nil:
		return err
	case j.ended() || !running:
		return sdk.Errorf(sdk.ErrConflict, "execution %s's job has ended (%s)", id, why)
	}
	if err := syscall.Kill(-j.rec.PID, sig); err != nil {
		return fmt.Errorf("runner: signal process group %d: %w", j.rec.PID, err)
	}
	return nil
}

func (rn *runner) inject(_ context.Context, _ *sdk.Request, p sdk.ExecutorInjectParams) error {
	j, err := rn.lookup(p.ExecutionRef)
	if err != nil {
		return err
	}
	switch {
	case strings.ContainsAny(p.Text, "\r\n"):
		return sdk.Errorf(sdk.ErrInvalid, "inject takes one line: send each line of a longer text in its own inject")
	case len(p.Text)+1 > MaxInjectBytes:
		return sdk.Errorf(sdk.ErrTooLarge, "the line is %d bytes; inject at most %d at a time", len(p.Text), MaxInjectBytes-1)
	case j.ended():
		return sdk.Errorf(sdk.ErrConflict, "execution %s's job has ended", p.Execution)
	}
	// Non-blocking: a job that reads nothing must not hold the call.
	f, err := os.OpenFile(j.rec.Input, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return sdk.Errorf(sdk.ErrConflict, "execution %s's job no longer reads its input", p.Execution)
	}
	if err != nil {
		return fmt.Errorf("runner: open the job's input: %w", err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(p.Text + "\n")); err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			return sdk.Errorf(sdk.ErrConflict, "execution %s's job has not read the lines injected before: its input is full", p.Execution)
		}
		return fmt.Errorf("runner: write the job's input: %w", err)
	}
	return nil
}

func (rn *runner) stop(ctx context.Context, r *sdk.Request, p sdk.ExecutorStopParams) (sdk.ExecutorStopResult, error) {
	if err := checkExecutionID(p.Execution); err != nil {
		return sdk.ExecutorStopResult{}, err
	}
	rn.mu.Lock()
	j := rn.jobs[p.Execution]
	rn.mu.Unlock()
	var rec Recovery
	switch {
	case j != nil:
		if _, err := rn.lookup(p.ExecutionRef); err != nil {
			return sdk.ExecutorStopResult{}, err
		}
		rec = j.rec
	case len(p.Recovery) > 0:
		if err := json.Unmarshal(p.Recovery, &rec); err != nil {
			return sdk.ExecutorStopResult{}, sdk.Errorf(sdk.ErrInvalid, "execution %s's recovery metadata is not runner's: %v", p.Execution, err)
		}
	default:
		dir, err := jobDir(r, p.Execution)
		if err != nil {
			return sdk.ExecutorStopResult{}, err
		}
		raw, err := os.ReadFile(filepath.Join(dir, "recovery.json"))
		if errors.Is(err, fs.ErrNotExist) {
			return sdk.ExecutorStopResult{Stopped: true, Evidence: fmt.Sprintf("runner started no job for execution %s: it has no job directory", p.Execution)}, nil
		}
		if err == nil {
			err = json.Unmarshal(raw, &rec)
		}
		if err != nil {
			return sdk.ExecutorStopResult{}, fmt.Errorf("runner: read execution %s's job record: %w", p.Execution, err)
		}
	}
	if err := rec.check(); err != nil {
		return sdk.ExecutorStopResult{}, sdk.Errorf(sdk.ErrInvalid, "execution %s's recovery metadata is not runner's: %v", p.Execution, err)
	}
	res, err := stopGroup(ctx, rec)
	if err == nil && res.Stopped && j != nil {
		// Let the reaper record the exit, so a wait after the stop
		// answers at once.
		select {
		case <-j.done:
		case <-ctx.Done():
		}
	}
	return res, err
}

// stopGroup ends what is left of the job's process group: SIGTERM, then
// SIGKILL after the grace, and answers the evidence.
func stopGroup(ctx context.Context, rec Recovery) (sdk.ExecutorStopResult, error) {
	pgid := rec.PID
	owned, why, err := ownsGroup(rec)
	if err != nil {
		return sdk.ExecutorStopResult{}, err
	}
	if !owned {
		return sdk.ExecutorStopResult{Stopped: true, Evidence: why}, nil
	}
	began := time.Now()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.Duration(rec.StopGraceMS) * time.Millisecond
	left, err := waitGroupGone(ctx, pgid, grace)
	if err != nil {
		return sdk.ExecutorStopResult{}, err
	}
	if len(left) == 0 {
		return sdk.ExecutorStopResult{Stopped: true, Evidence: fmt.Sprintf(
			"no process of the job's group %d is left (read from /proc) %v after SIGTERM", pgid, time.Since(began).Round(time.Millisecond))}, nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if left, err = waitGroupGone(ctx, pgid, killWait); err != nil {
		return sdk.ExecutorStopResult{}, err
	}
	if len(left) > 0 {
		return sdk.ExecutorStopResult{Stopped: false, Evidence: fmt.Sprintf("processes %v of the job's group %d are left after SIGKILL", left, pgid)}, nil
	}
	return sdk.ExecutorStopResult{Stopped: true, Evidence: fmt.Sprintf(
		"no process of the job's group %d is left (read from /proc) after SIGKILL, sent when %v of SIGTERM grace passed", pgid, grace)}, nil
}

// ownsGroup reports whether live processes of the job's group remain.
// The group's ID is the job's pid, and Linux gives no new process that
// pid while any member of the group lives, so: if the pid names another
// process now, the group ended before it; otherwise every live member is
// the job's. why is the evidence when none is left.
func ownsGroup(rec Recovery) (bool, string, error) {
	if rec.BootID != "" && rec.BootID != proc.BootID() {
		return false, "the machine has restarted since the job started, so none of its processes runs", nil
	}
	p, err := proc.Stat(rec.PID)
	switch {
	case err != nil && !errors.Is(err, proc.ErrNoProcess):
		return false, "", err
	case err == nil && p.StartTicks != rec.StartTime:
		return false, fmt.Sprintf("pid %d is another process now (start time %d, the job's %d), so the job's group had ended", rec.PID, p.StartTicks, rec.StartTime), nil
	}
	left, err := proc.GroupMembers(rec.PID, 0)
	if err != nil {
		return false, "", err
	}
	if len(left) == 0 {
		return false, fmt.Sprintf("no process of the job's group %d is left (read from /proc)", rec.PID), nil
	}
	return true, "", nil
}

// waitGroupGone waits up to d for group pgid to have no live process,
// answering those left.
func waitGroupGone(ctx context.Context, pgid int, d time.Duration) ([]int, error) {
	deadline := time.Now().Add(d)
	for {
		left, err := proc.GroupMembers(pgid, 0)
		if err != nil || len(left) == 0 || !time.Now().Before(deadline) {
			return left, err
		}
		select {
		case <-ctx.Done():
			return left, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// forget drops a settled execution: the package's record of it and its
// job's files. Forgetting one the process does not know is no error.
func (rn *runner) forget(_ context.Context, r *sdk.Request, ref sdk.ExecutionRef) error {
	if err := checkExecutionID(ref.Execution); err != nil {
		return err
	}
	dir, err := jobDir(r, ref.Execution)
	if err != nil {
		return err
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	j := rn.jobs[ref.Execution]
	rec := Recovery{}
	if j != nil {
		rec = j.rec
	} else if raw, err := os.ReadFile(filepath.Join(dir, "recovery.json")); err == nil {
		_ = json.Unmarshal(raw, &rec)
	}
	if rec.PID > 0 {
		if running, _, err := rec.identify(); err != nil || running {
			return sdk.Errorf(sdk.ErrConflict, "execution %s's job still runs: stop it before forgetting it", ref.Execution)
		}
	}
	delete(rn.jobs, ref.Execution)
	for _, d := range []string{dir, rec.Dir} {
		// Only a job directory: the metadata's path is the host's copy of
		// what this package wrote, but a path is removed only if it is one.
		if d != "" && filepath.Base(d) == ref.Execution && filepath.Base(filepath.Dir(d)) == "jobs" {
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("runner: remove execution %s's files: %w", ref.Execution, err)
			}
		}
	}
	return nil
}
