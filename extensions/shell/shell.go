// Package shell is the bundled shell executor: a binding whose executor is
// shell runs its command once for each attempt of a Work, as a detached
// process that outlives the package and the daemon, so a crash of either
// is not a failure of the Work.
//
// A binding's config:
//
//	{"command": "./deploy.sh --quick", "shell": "/bin/bash", "timeout_seconds": 600}
//
// command (required) is script text or an executable's path, run as
// <shell> -c <command>; shell is an absolute path (default /bin/sh);
// timeout_seconds, when set, stops an attempt that runs longer (it then
// fails). Any other member, or a bad value, refuses the run invalid.
//
// Each attempt runs in its own session and process group (setsid), with
// its working directory the attempt's run directory,
// <state_dir>/runs/<execution_id> (removed KeepRuns after the command
// ended), which holds:
//
//   - inputs.json: the Work, its inputs, what woke the attempt and the
//     Work's context, as JSON (Inputs); its path is in OPEN_CONDUIT_INPUTS;
//   - stdin: a fifo that is the command's standard input; inject and resume
//     write lines to it. The command holds it open for writing too, so a
//     read never sees end of file and a command may ignore it;
//   - stdout, stderr: the command's outputs, streamed while it runs into the
//     artifacts "stdout" and "stderr" of the execution and committed when it
//     ends;
//   - exit: the command's exit status, written by the wrapper shell that
//     leads the group, so a package that did not start it still learns it.
//
// The environment is the package's own, then the toolbelt variables
// (OPEN_CONDUIT_TOOLBELT, OPEN_CONDUIT_TOKEN, OPEN_CONDUIT_WORK,
// OPEN_CONDUIT_EXECUTION, OPEN_CONDUIT and whatever else the host passes
// for the binding), then OPEN_CONDUIT_INPUTS.
//
// An execution's recovery metadata (Recovery) is the wrapper's pid and
// start time (members "pid" and "start_ticks", the names the daemon records
// detached work by) and the run directory's files; a later process of the
// package adopts the execution only when a process with that pid and that
// start time still runs (or the exit file says it ended), never by pid
// alone.
// The executor serves stop (SIGTERM to the group, SIGKILL after a grace,
// with the evidence of which check found the group empty), interrupt
// (SIGINT to the group), inject and resume (a line on stdin) and live (the
// tails of stdout and stderr). It needs /proc (Linux).
package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/proc"
)

// Names the package declares.
const (
	// Name is the package's name and its executor's.
	Name = "shell"
	// EnvInputs names the file holding the attempt's Inputs.
	EnvInputs = "OPEN_CONDUIT_INPUTS"
	// StdoutArtifact and StderrArtifact name the artifacts the outputs are
	// streamed into.
	StdoutArtifact = "stdout"
	StderrArtifact = "stderr"
	// DefaultShell runs the command when the config names no shell.
	DefaultShell = "/bin/sh"
	// MaxTimeoutSeconds bounds timeout_seconds (30 days).
	MaxTimeoutSeconds = 30 * 24 * 3600
)

// Timing of the executor's own work, variables so a test may shorten them.
var (
	// StopGrace is how long stop waits after SIGTERM before SIGKILL.
	StopGrace = 5 * time.Second
	// pollEvery is how often an execution's outputs are streamed and its
	// process checked.
	pollEvery = 200 * time.Millisecond
)

// Config is a shell binding's config.
type Config struct {
	Command        string `json:"command"`
	Shell          string `json:"shell,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// Inputs is what inputs.json holds: the attempt and the Work it runs.
type Inputs struct {
	Execution string         `json:"execution_id"`
	Attempt   int            `json:"attempt"`
	Work      sdk.WorkView   `json:"work"`
	Inputs    []sdk.Event    `json:"inputs"`
	Woke      *sdk.Wake      `json:"woke,omitempty"`
	Context   jsontext.Value `json:"context,omitzero"`
}

// Recovery is an execution's recovery metadata: who the process is (pid
// and start time, in clock ticks after boot as /proc/PID/stat's field 22
// gives it) and where its files are.
type Recovery struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	Started    time.Time `json:"started"`
	// Deadline is when timeout_seconds ends the attempt (zero: never).
	Deadline time.Time `json:"deadline,omitzero"`
	Dir      string    `json:"dir"`
	Stdin    string    `json:"stdin"`
	Stdout   string    `json:"stdout"`
	Stderr   string    `json:"stderr"`
	Exit     string    `json:"exit"`
	Inputs   string    `json:"inputs"`
	// Artifacts are the artifacts being written, by output name, so an
	// adopter abandons them and writes its own.
	Artifacts map[string]string `json:"artifacts,omitempty"`
}

// Extension builds the shell package.
func Extension() *sdk.Extension {
	e := &executor{runs: map[string]*run{}}
	return sdk.New(Name, sdk.Version("0.1.0"), sdk.HostRun(),
		sdk.Title("Shell"), sdk.Summary("runs a binding's shell command for each attempt, detached, with its output as artifacts"),
		sdk.Certification(Certification)).
		Executor(Name, sdk.ExecutorFuncs{
			Run: e.run, Wait: e.wait, Recover: e.recover,
			Stop: e.stop, Interrupt: e.interrupt, Inject: e.inject, Resume: e.resume, Live: e.live,
		},
			sdk.JobsPool(),
			sdk.ExecutorToolbelt("cli"),
			sdk.ExecutorFields(
				sdk.Field{Name: "command", Required: true, Help: "Script text or an executable's path, run as <shell> -c <command> in the attempt's run directory."},
				sdk.Field{Name: "shell", Default: DefaultShell, Help: "The shell's absolute path."},
				sdk.Field{Name: "timeout_seconds", Help: "Stop an attempt that runs longer, which then fails (default: no limit)."},
			))
}

// KeepRuns is how long an ended attempt's run directory is kept (its
// outputs are in their artifacts by then); a run prunes older ones.
var KeepRuns = 24 * time.Hour

// pruneEvery spaces the prunes, so a busy binding does not list the runs
// directory at every attempt.
const pruneEvery = 10 * time.Minute

// executor is the package's state: the executions this process started or
// adopted.
type executor struct {
	mu     sync.Mutex
	runs   map[string]*run
	pruned time.Time
}

// prune removes the run directories of attempts that ended (their exit
// file was written) longer than KeepRuns ago, and forgets their runs. A
// directory with no exit file may belong to a command that still runs, or
// that an adopter has yet to settle: it is left alone.
func (e *executor) prune(runs string, now time.Time) {
	e.mu.Lock()
	if now.Sub(e.pruned) < pruneEvery {
		e.mu.Unlock()
		return
	}
	e.pruned = now
	e.mu.Unlock()
	ents, err := os.ReadDir(runs)
	if err != nil {
		return
	}
	for _, ent := range ents {
		st, err := os.Stat(filepath.Join(runs, ent.Name(), "exit"))
		if err != nil || now.Sub(st.ModTime()) < KeepRuns {
			continue
		}
		e.mu.Lock()
		if rn := e.runs[ent.Name()]; rn != nil {
			select {
			case <-rn.done:
				delete(e.runs, ent.Name())
			default:
				e.mu.Unlock()
				continue
			}
		}
		e.mu.Unlock()
		if err := os.RemoveAll(filepath.Join(runs, ent.Name())); err != nil {
			logf("shell: pruning run directory %s: %v", ent.Name(), err)
		}
	}
}

// executionID is what an execution ID may be: it names a directory.
var executionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// decodeConfig reads a binding's config, refusing what it cannot run. A
// message names the member to change, never its value.
func decodeConfig(b sdk.RunBinding) (Config, error) {
	var c Config
	if len(b.Config) == 0 || string(b.Config) == "null" {
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q has no config: set config.command to the script to run", b.Name)
	}
	if err := json.Unmarshal(b.Config, &c, json.RejectUnknownMembers(true)); err != nil {
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q: the shell executor's config takes command (string), shell (absolute path) and timeout_seconds (integer): %v", b.Name, err)
	}
	if c.Shell == "" {
		c.Shell = DefaultShell
	}
	switch {
	case strings.TrimSpace(c.Command) == "":
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q: config.command is empty: set it to script text or an executable's path", b.Name)
	case !filepath.IsAbs(c.Shell):
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q: config.shell is not an absolute path: name the shell as /bin/bash, say, or leave it out for %s", b.Name, DefaultShell)
	case c.TimeoutSeconds < 0 || c.TimeoutSeconds > MaxTimeoutSeconds:
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q: config.timeout_seconds must be 0 (no limit) to %d", b.Name, MaxTimeoutSeconds)
	}
	if st, err := os.Stat(c.Shell); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return c, sdk.Errorf(sdk.ErrInvalid, "binding %q: config.shell names no executable file here: name an installed shell", b.Name)
	}
	return c, nil
}

// ref names an execution under its epoch.
func ref(execution string, epoch uint64) sdk.ExecutionRef {
	return sdk.ExecutionRef{Execution: execution, Epoch: epoch, Executor: Name}
}

// run starts an attempt: its files, its process, its first recovery
// metadata persisted before it answers, so a crash right after still
// leaves the host what adoption needs.
func (e *executor) run(ctx context.Context, r *sdk.Request, p sdk.ExecutorRunParams) (sdk.ExecutorRunResult, error) {
	if !proc.Supported {
		return sdk.ExecutorRunResult{}, sdk.Errorf(sdk.ErrUnsupported, "the shell executor needs /proc to know its processes again after a restart, and this system has none")
	}
	if !executionID.MatchString(p.Execution) {
		return sdk.ExecutorRunResult{}, sdk.Errorf(protocol.ErrInvalidParams, "execution_id must be letters, digits, '_', '.' or '-', at most 128")
	}
	c, err := decodeConfig(p.Binding)
	if err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	e.mu.Lock()
	known := e.runs[p.Execution]
	e.mu.Unlock()
	if known != nil {
		// A retried executor.run of a started execution answers what the
		// first did, and starts nothing more.
		if known.currentEpoch() != p.Epoch {
			return sdk.ExecutorRunResult{}, sdk.Errorf(sdk.ErrConflict, "execution %s already runs under another lease epoch", p.Execution)
		}
		raw, err := json.Marshal(known.rec)
		return sdk.ExecutorRunResult{Recovery: raw}, err
	}
	state := r.Host.StateDir()
	if state == "" {
		return sdk.ExecutorRunResult{}, sdk.Errorf(sdk.ErrUnsupported, "the host named no state directory, where the shell executor keeps its runs")
	}
	e.prune(filepath.Join(state, "runs"), time.Now())
	rn, err := start(r.Host, filepath.Join(state, "runs", p.Execution), c, p)
	if err != nil {
		return sdk.ExecutorRunResult{}, err
	}
	raw, err := json.Marshal(rn.rec)
	if err == nil {
		err = r.Host.PersistRecovery(ctx, ref(p.Execution, p.Epoch), jsontext.Value(raw), sdk.DetachedProcess(rn.rec.PID, rn.rec.StartTicks))
		if errors.Is(err, sdk.ErrUnsupported) {
			// A host without execution.persist_recovery persists the
			// metadata the answer carries.
			err = nil
		}
	}
	if err != nil {
		// The host refused the attempt (a superseded lease): nothing of it
		// may run on.
		rn.terminate(context.WithoutCancel(ctx), "not started: its recovery metadata was refused")
		rn.abortArtifacts()
		return sdk.ExecutorRunResult{}, err
	}
	e.mu.Lock()
	e.runs[p.Execution] = rn
	e.mu.Unlock()
	go rn.watch()
	return sdk.ExecutorRunResult{Recovery: raw}, nil
}

// find is the execution a call names, refused when this process does not
// know it or knows it under another lease epoch.
func (e *executor) find(x sdk.ExecutionRef) (*run, error) {
	e.mu.Lock()
	rn := e.runs[x.Execution]
	e.mu.Unlock()
	if rn == nil {
		return nil, sdk.Errorf(sdk.ErrNotFound, "execution %s is not one this process runs: recover it first", x.Execution)
	}
	if ep := rn.currentEpoch(); ep != x.Epoch {
		return nil, sdk.Errorf(sdk.ErrConflict, "execution %s runs under lease epoch %d here, not %d", x.Execution, ep, x.Epoch)
	}
	return rn, nil
}

// wait answers when the execution's process ends and its outputs are
// committed; cancelling it stops only the observation.
func (e *executor) wait(ctx context.Context, _ *sdk.Request, x sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
	rn, err := e.find(x)
	if err != nil {
		return sdk.ExecutorWaitResult{}, err
	}
	select {
	case <-rn.done:
		return rn.result, nil
	case <-ctx.Done():
		return sdk.ExecutorWaitResult{}, ctx.Err()
	}
}

// recover adopts an execution from its metadata: one whose process (that
// pid with that start time) still runs, or one whose wrapper recorded its
// exit status. Anything else is not adoptable: a pid alone proves nothing.
func (e *executor) recover(ctx context.Context, r *sdk.Request, p sdk.ExecutorRecoverParams) error {
	if len(p.Recovery) == 0 {
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s has no recovery metadata", p.Execution)
	}
	var rec Recovery
	if err := json.Unmarshal(p.Recovery, &rec); err != nil || rec.PID <= 0 || rec.StartTicks == 0 || !filepath.IsAbs(rec.Dir) {
		return sdk.Errorf(sdk.ErrNotAdoptable, "execution %s's recovery metadata is not the shell executor's (pid, start_ticks, dir)", p.Execution)
	}
	e.mu.Lock()
	known := e.runs[p.Execution]
	e.mu.Unlock()
	if known != nil && known.rec.PID == rec.PID && known.rec.StartTicks == rec.StartTicks {
		known.setEpoch(p.Epoch)
		return nil
	}
	info, err := proc.Stat(rec.PID)
	found := err == nil
	running := found && info.StartTicks == rec.StartTicks && !info.Exited()
	if !running {
		if _, err := os.Stat(rec.Exit); err != nil {
			if found && info.StartTicks != rec.StartTicks {
				return sdk.Errorf(sdk.ErrNotAdoptable, "process %d of execution %s is another process now (started at tick %d, not %d)", rec.PID, p.Execution, info.StartTicks, rec.StartTicks)
			}
			return sdk.Errorf(sdk.ErrNotAdoptable, "process %d of execution %s is gone and recorded no exit status", rec.PID, p.Execution)
		}
	}
	rn := adopt(r.Host, rec, p.Execution, p.Epoch)
	raw, err := json.Marshal(rn.rec)
	if err == nil {
		err = r.Host.PersistRecovery(ctx, ref(p.Execution, p.Epoch), jsontext.Value(raw), sdk.DetachedProcess(rn.rec.PID, rn.rec.StartTicks))
		if errors.Is(err, sdk.ErrUnsupported) {
			err = nil
		}
	}
	if err != nil {
		rn.abortArtifacts()
		return err
	}
	e.mu.Lock()
	e.runs[p.Execution] = rn
	e.mu.Unlock()
	go rn.watch()
	return nil
}

// stop ends the execution's whole process group and answers how it knows
// nothing of it runs: by the process this process knows, or by the
// recovery metadata the host sends for one it does not.
func (e *executor) stop(ctx context.Context, _ *sdk.Request, p sdk.ExecutorStopParams) (sdk.ExecutorStopResult, error) {
	e.mu.Lock()
	rn := e.runs[p.Execution]
	e.mu.Unlock()
	if rn == nil {
		var rec Recovery
		if len(p.Recovery) == 0 {
			return sdk.ExecutorStopResult{}, sdk.Errorf(sdk.ErrNotFound, "execution %s is not one this process runs, and the stop carries no recovery metadata to find it by", p.Execution)
		}
		if err := json.Unmarshal(p.Recovery, &rec); err != nil || rec.PID <= 0 || rec.StartTicks == 0 {
			return sdk.ExecutorStopResult{}, sdk.Errorf(sdk.ErrInvalid, "execution %s's recovery metadata is not the shell executor's (pid, start_ticks)", p.Execution)
		}
		rn = &run{rec: rec}
	}
	return rn.terminate(ctx, "stopped")
}

// interrupt sends SIGINT to the execution's process group.
func (e *executor) interrupt(_ context.Context, _ *sdk.Request, x sdk.ExecutionRef) error {
	rn, err := e.find(x)
	if err != nil {
		return err
	}
	if rn.ended() {
		return sdk.Errorf(sdk.ErrConflict, "execution %s has ended", x.Execution)
	}
	rn.signal(sigInt)
	return nil
}

// inject writes one line to the execution's stdin.
func (e *executor) inject(_ context.Context, _ *sdk.Request, p sdk.ExecutorInjectParams) error {
	rn, err := e.find(p.ExecutionRef)
	if err != nil {
		return err
	}
	return rn.writeLine(p.Text)
}

// resume hands a command waiting on its stdin its input, as inject does:
// for a shell command, waiting for input is reading stdin.
func (e *executor) resume(_ context.Context, _ *sdk.Request, p sdk.ExecutorResumeParams) error {
	rn, err := e.find(p.ExecutionRef)
	if err != nil {
		return err
	}
	return rn.writeLine(p.Text)
}

// Live output bounds.
const (
	defaultTail = 4 << 10
	maxTail     = 64 << 10
)

// live answers the tails of stdout and stderr of a running execution.
func (e *executor) live(_ context.Context, _ *sdk.Request, p sdk.ExecutorLiveParams) (sdk.ExecutorLiveResult, error) {
	e.mu.Lock()
	rn := e.runs[p.Execution]
	e.mu.Unlock()
	if rn == nil || rn.ended() {
		return sdk.ExecutorLiveResult{}, sdk.Errorf(sdk.ErrNotLive, "execution %s is not running here: its output is in its artifacts", p.Execution)
	}
	if ep := rn.currentEpoch(); ep != p.Epoch {
		return sdk.ExecutorLiveResult{}, sdk.Errorf(sdk.ErrConflict, "execution %s runs under lease epoch %d here, not %d", p.Execution, ep, p.Epoch)
	}
	n := p.Tail
	if n <= 0 {
		n = defaultTail
	}
	n = min(n, maxTail)
	var out sdk.ExecutorLiveResult
	for _, o := range []struct{ name, path string }{{StdoutArtifact, rn.rec.Stdout}, {StderrArtifact, rn.rec.Stderr}} {
		size, tail, err := readTail(o.path, n)
		if err != nil {
			return sdk.ExecutorLiveResult{}, sdk.Errorf(sdk.ErrNotLive, "execution %s's %s cannot be read: %v", p.Execution, o.name, err)
		}
		out.Outputs = append(out.Outputs, sdk.LiveOutput{Name: o.name, MediaType: "text/plain", Size: size, Tail: tail})
	}
	return out, nil
}

// readTail reads a file's size and at most its last n bytes.
func readTail(path string, n int) (int64, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	from := max(0, st.Size()-int64(n))
	buf := make([]byte, st.Size()-from)
	k, err := f.ReadAt(buf, from)
	if err != nil && k < len(buf) {
		return 0, nil, err
	}
	return st.Size(), buf[:k], nil
}

// logf reports what the executor cannot tell the host through a call, on
// the package's stderr, which the host keeps in its logs.
func logf(format string, args ...any) { slog.Warn(fmt.Sprintf(format, args...)) }
