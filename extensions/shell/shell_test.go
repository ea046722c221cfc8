package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/sdk/proc"
)

// The test binary serves the package itself when packageEnv is set, so a
// test runs it as the daemon does: a process of its own, killed for real.
const (
	packageEnv = "SHELL_TEST_PACKAGE"
	graceEnv   = "SHELL_TEST_STOP_GRACE"
)

func TestMain(m *testing.M) {
	if os.Getenv(packageEnv) != "" {
		if d, err := time.ParseDuration(os.Getenv(graceEnv)); err == nil {
			StopGrace = d
		}
		pollEvery = 20 * time.Millisecond
		if err := sdk.ServeStreams(context.Background(), Extension(), os.Stdin, os.Stdout, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// deadline bounds every wait for an event (a loaded 2-core machine).
const deadline = 60 * time.Second

// pkg is one process of the package, served by an in-memory host that
// keeps artifacts and records the recovery metadata persisted.
type pkg struct {
	t    *testing.T
	cmd  *exec.Cmd
	conn *jsonrpc.Conn
	mem  *memhost.Host
	errs *bytes.Buffer

	mu        sync.Mutex
	persisted []protocol.ExecutionPersistRecoveryParams
	refuse    error // what execution.persist_recovery answers, once recorded
}

// startPackage starts a process of the package on stateDir; a test that
// starts a second one on the same directory is the package restarted.
func startPackage(t *testing.T, stateDir string) *pkg {
	t.Helper()
	m := Extension().Manifest
	p := &pkg{t: t, mem: memhost.New(Name, memhost.WithManifest(m)), errs: &bytes.Buffer{}}
	table := jsonrpc.NewTable()
	// The test records execution.persist_recovery itself (what the package
	// persisted, and a refusal on demand); memhost answers the rest.
	for _, method := range p.mem.Table().Methods() {
		if method == protocol.MethodExecutionPersistRecovery {
			continue
		}
		fn, _ := p.mem.Table().Lookup(method)
		table.HandleRaw(method, fn)
	}
	table.HandleRaw(protocol.MethodExecutionPersistRecovery, func(_ context.Context, raw jsontext.Value) (any, error) {
		var pr protocol.ExecutionPersistRecoveryParams
		if err := json.Unmarshal(raw, &pr); err != nil {
			return nil, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.persisted = append(p.persisted, pr)
		if p.refuse != nil {
			return nil, p.refuse
		}
		return protocol.ExecutionPersistRecoveryResult{}, nil
	})
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), packageEnv+"=1", graceEnv+"=1s")
	p.cmd.Stderr = &lockedWriter{w: p.errs}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.conn = jsonrpc.New(stdout, stdin, jsonrpc.Options{Peer: "package shell", Handlers: table})
	t.Cleanup(func() {
		p.crash()
		if t.Failed() {
			t.Logf("package stderr:\n%s", p.errs)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var init protocol.InitializeResult
	if err := p.conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: protocol.Versions, StateDir: stateDir}, &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := p.conn.Call(ctx, protocol.MethodConfigure, protocol.ConfigureParams{}, nil); err != nil {
		t.Fatalf("configure: %v", err)
	}
	return p
}

// crash kills the package's process outright, as a crash would.
func (p *pkg) crash() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.conn.Close()
}

// call calls method on the package. The host holds an execution before it
// runs or recovers it, as the scheduler does, so the package's artifacts
// may name it.
func (p *pkg) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	switch rp := params.(type) {
	case protocol.ExecutorRunParams:
		p.mem.PutExecution(protocol.ExecutionRef{Execution: rp.Execution, Epoch: rp.Epoch, Executor: rp.Executor}, rp.Work.ID)
	case protocol.ExecutorRecoverParams:
		p.mem.PutExecution(protocol.ExecutionRef{Execution: rp.Execution, Epoch: rp.Epoch, Executor: rp.Executor}, rp.Work.ID)
	}
	return p.conn.Call(ctx, method, params, result)
}

// lastRecovery is the recovery metadata persisted last.
func (p *pkg) lastRecovery() (protocol.ExecutionPersistRecoveryParams, Recovery) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.persisted) == 0 {
		p.t.Fatal("no recovery metadata was persisted")
	}
	last := p.persisted[len(p.persisted)-1]
	var rec Recovery
	if err := json.Unmarshal(last.Recovery, &rec); err != nil {
		p.t.Fatal(err)
	}
	return last, rec
}

// artifact is the committed artifact of that name.
func (p *pkg) artifact(name string) string {
	p.t.Helper()
	for _, a := range p.mem.Artifacts() {
		if a.Name == name && a.Committed {
			return string(a.Data)
		}
	}
	p.t.Fatalf("no committed %s artifact", name)
	return ""
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// params is an attempt of Work w_1 under epoch 1 with the binding config
// config ("" for none).
func params(execution, config string) sdk.ExecutorRunParams {
	var cfg jsontext.Value
	if config != "" {
		cfg = jsontext.Value(config)
	}
	return sdk.ExecutorRunParams{
		Execution: execution, Epoch: 1, Executor: Name, Attempt: 1,
		Work:    sdk.WorkView{ID: "w_1", Scope: "demo", Kind: "demo.job", State: "running"},
		Inputs:  []sdk.Event{{ID: "ev_1", Scope: "demo", Source: "demo", Type: "demo.ping", Payload: protocol.Payload{Schema: "demo.ping.v1", Data: jsontext.Value(`{"n":7}`)}}},
		Context: jsontext.Value(`{"note":"ctx"}`),
		Binding: sdk.RunBinding{Name: "run", Config: cfg},
		Env: map[string]string{
			protocol.EnvToolbelt: "/run/toolbelt.sock", protocol.EnvToken: "tok-1", protocol.EnvBinary: "/usr/bin/open-conduit",
			"GRANTED": "yes",
		},
		Toolbelt: sdk.Toolbelt{Socket: "/run/toolbelt.sock", Token: "tok-1"},
	}
}

// script is a binding config running script.
func script(text string) string {
	b, _ := json.Marshal(Config{Command: text})
	return string(b)
}

// startRun runs an execution and arranges for its process group to be killed
// when the test ends, whatever happened.
func startRun(t *testing.T, p *pkg, rp sdk.ExecutorRunParams) Recovery {
	t.Helper()
	var res sdk.ExecutorRunResult
	if err := p.call(protocol.MethodExecutorRun, rp, &res); err != nil {
		t.Fatalf("executor.run: %v", err)
	}
	var rec Recovery
	if err := json.Unmarshal(res.Recovery, &rec); err != nil || rec.PID <= 0 || rec.StartTicks == 0 {
		t.Fatalf("run answered recovery %s: %v", res.Recovery, err)
	}
	t.Cleanup(func() { killGroup(rec) })
	return rec
}

// killGroup kills what is left of an execution's group: each process of it
// that started no earlier than its leader.
func killGroup(rec Recovery) {
	left, _ := proc.GroupMembers(rec.PID, rec.StartTicks)
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func waitFor(t *testing.T, p *pkg, execution string, epoch uint64) sdk.ExecutorWaitResult {
	t.Helper()
	var res sdk.ExecutorWaitResult
	if err := p.call(protocol.MethodExecutorWait, ref(execution, epoch), &res); err != nil {
		t.Fatalf("executor.wait: %v", err)
	}
	return res
}

// liveUntil polls executor.live until the execution's stdout holds want.
func liveUntil(t *testing.T, p *pkg, execution string, epoch uint64, want string) sdk.ExecutorLiveResult {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		var live sdk.ExecutorLiveResult
		err := p.call(protocol.MethodExecutorLive, sdk.ExecutorLiveParams{ExecutionRef: ref(execution, epoch)}, &live)
		if err == nil && len(live.Outputs) == 2 && strings.Contains(string(live.Outputs[0].Tail), want) {
			return live
		}
		if time.Now().After(end) {
			t.Fatalf("stdout never showed %q: %+v, %v", want, live, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestManifestDeclaresTheShellExecutorAndIsValid(t *testing.T) {
	m := Extension().Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !protocol.IsHostRun(m.Command, Name) {
		t.Fatalf("command %v", m.Command)
	}
	if len(m.Provides.Executors) != 1 {
		t.Fatalf("executors %+v", m.Provides.Executors)
	}
	e := m.Provides.Executors[0]
	c := e.Capabilities
	if e.Name != Name || e.Pool != "jobs" || !c.Interrupt || !c.Inject || !c.Resume ||
		strings.Join(e.Controls, ",") != "stop,live" || strings.Join(c.Toolbelt, ",") != "cli" {
		t.Errorf("executor %+v", e)
	}
	if _, err := protocol.ParseCertification(Certification); err != nil {
		t.Fatalf("certification: %v", err)
	}
}

// TestRunWaitSettlesByExitStatusWithOutputsAsArtifacts: exit 0 completes,
// any other status fails with it; stdout and stderr become committed
// artifacts; the metadata is persisted under the run's lease at start.
func TestRunWaitSettlesByExitStatusWithOutputsAsArtifacts(t *testing.T) {
	p := startPackage(t, t.TempDir())
	zero, three := 0, 3
	for _, tc := range []struct {
		name, script   string
		want           sdk.ExecutorWaitResult
		stdout, stderr string
	}{
		{"exit 0 completes", "echo hello; echo oops >&2", sdk.ExecutorWaitResult{State: sdk.OutcomeCompleted, ExitCode: &zero}, "hello\n", "oops\n"},
		{"exit 3 fails with it", "echo partial; exit 3", sdk.ExecutorWaitResult{State: sdk.OutcomeFailed, Reason: "exit status 3", ExitCode: &three}, "partial\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.mem.DropArtifacts()
			execution := "x_" + strings.ReplaceAll(tc.name, " ", "_")
			rec := startRun(t, p, params(execution, script(tc.script)))
			persisted, prec := p.lastRecovery()
			if persisted.Execution != execution || persisted.Epoch != 1 || persisted.Executor != Name || prec.PID != rec.PID || prec.StartTicks != rec.StartTicks {
				t.Errorf("persisted %+v %+v, want the run's metadata under epoch 1", persisted.ExecutionRef, prec)
			}
			got := waitFor(t, p, execution, 1)
			if got.State != tc.want.State || got.Reason != tc.want.Reason || (got.ExitCode == nil) != (tc.want.ExitCode == nil) ||
				(got.ExitCode != nil && *got.ExitCode != *tc.want.ExitCode) {
				t.Errorf("wait %+v (exit %v), want %+v", got, got.ExitCode, tc.want)
			}
			if out := p.artifact(StdoutArtifact); out != tc.stdout {
				t.Errorf("stdout artifact %q, want %q", out, tc.stdout)
			}
			if out := p.artifact(StderrArtifact); out != tc.stderr {
				t.Errorf("stderr artifact %q, want %q", out, tc.stderr)
			}
		})
	}
}

// TestRefusedRecoveryMetadataStopsTheCommandAndFailsTheRun: a host that
// refuses the first metadata (a superseded lease) gets its own refusal
// back, and nothing of the attempt runs on: its group is gone and its
// artifacts abandoned. A retried run of a started execution starts
// nothing more.
func TestRefusedRecoveryMetadataStopsTheCommandAndFailsTheRun(t *testing.T) {
	p := startPackage(t, t.TempDir())
	p.mu.Lock()
	p.refuse = protocol.Errorf(protocol.ErrConflict, "lease epoch 1 is superseded")
	p.mu.Unlock()
	err := p.call(protocol.MethodExecutorRun, params("x_refused", script("sleep 300")), nil)
	if !errors.Is(err, sdk.ErrConflict) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("run: %v, want the host's conflict", err)
	}
	_, rec := p.lastRecovery()
	t.Cleanup(func() { killGroup(rec) })
	if left := members(t, rec.PID, rec.StartTicks); len(left) != 0 {
		t.Errorf("processes %v of a refused attempt run on", left)
	}
	arts := p.mem.Artifacts()
	if len(arts) != 2 {
		t.Errorf("the refused attempt opened %d artifacts, want stdout and stderr", len(arts))
	}
	for _, a := range arts {
		if !a.Aborted {
			t.Errorf("artifact %s of a refused attempt is not abandoned", a.Name)
		}
	}

	p.mu.Lock()
	p.refuse = nil
	p.mu.Unlock()
	first := startRun(t, p, params("x_twice", script("read line")))
	var again sdk.ExecutorRunResult
	if err := p.call(protocol.MethodExecutorRun, params("x_twice", script("read line")), &again); err != nil {
		t.Fatal(err)
	}
	var second Recovery
	if err := json.Unmarshal(again.Recovery, &second); err != nil || second.PID != first.PID || second.StartTicks != first.StartTicks {
		t.Errorf("a retried run answered %+v, want the first run's process %d", second, first.PID)
	}
}

// TestCommandSeesToolbeltEnvAndItsInputsFile: the host's Env and the
// toolbelt variables reach the command, and OPEN_CONDUIT_INPUTS names an
// owner-only file with the Work, its inputs and its context.
func TestCommandSeesToolbeltEnvAndItsInputsFile(t *testing.T) {
	state := t.TempDir()
	p := startPackage(t, state)
	text := `printf '%s\n' "$OPEN_CONDUIT_TOOLBELT" "$OPEN_CONDUIT_TOKEN" "$OPEN_CONDUIT_WORK" "$OPEN_CONDUIT_EXECUTION" "$OPEN_CONDUIT" "$GRANTED" "$PWD"; cat "$OPEN_CONDUIT_INPUTS"`
	startRun(t, p, params("x_env", script(text)))
	if got := waitFor(t, p, "x_env", 1); got.State != sdk.OutcomeCompleted {
		t.Fatalf("wait %+v", got)
	}
	out := p.artifact(StdoutArtifact)
	lines := strings.SplitN(out, "\n", 8)
	dir := filepath.Join(state, "runs", "x_env")
	want := []string{"/run/toolbelt.sock", "tok-1", "w_1", "x_env", "/usr/bin/open-conduit", "yes", dir}
	if len(lines) != 8 || strings.Join(lines[:7], "|") != strings.Join(want, "|") {
		t.Fatalf("stdout %q, want the lines %q then the inputs", out, want)
	}
	var in Inputs
	if err := json.Unmarshal([]byte(lines[7]), &in); err != nil {
		t.Fatalf("inputs file %q: %v", lines[7], err)
	}
	if in.Execution != "x_env" || in.Work.ID != "w_1" || len(in.Inputs) != 1 || in.Inputs[0].ID != "ev_1" || string(in.Context) != `{"note":"ctx"}` {
		t.Errorf("inputs %+v", in)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "inputs.json"): 0o600, filepath.Join(dir, "stdout"): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode() != mode {
			t.Errorf("%s: mode %v, %v; want %v", path, st.Mode(), err, mode)
		}
	}
}

// TestInvalidConfigIsRefusedSayingWhatToChange: each bad config is refused
// invalid before anything starts, naming the member and never its value.
func TestInvalidConfigIsRefusedSayingWhatToChange(t *testing.T) {
	state := t.TempDir()
	p := startPackage(t, state)
	for _, tc := range []struct {
		name, config, says string
	}{
		{"no config", ``, "config.command"},
		{"an unknown member", `{"command":"echo s3cret","cmd":"x"}`, "takes command"},
		{"an empty command", `{"command":"  "}`, "config.command is empty"},
		{"a relative shell", `{"command":"true","shell":"s3cret/sh"}`, "config.shell is not an absolute path"},
		{"a shell that is not there", `{"command":"true","shell":"/nonexistent/s3cret"}`, "config.shell names no executable"},
		{"a negative timeout", `{"command":"true","timeout_seconds":-1}`, "config.timeout_seconds"},
		{"a command that is not a string", `{"command":7}`, "takes command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.call(protocol.MethodExecutorRun, params("x_bad", tc.config), nil)
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("run: %v, want invalid saying %q without the value", err, tc.says)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(state, "runs", "x_bad")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left its directory: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.persisted) != 0 {
		t.Errorf("a refused run persisted %d metadata", len(p.persisted))
	}
}

// TestInjectAndResumeReachAScriptReadingStdin: each line arrives on the
// command's stdin; once the command has ended, input is not accepted.
func TestInjectAndResumeReachAScriptReadingStdin(t *testing.T) {
	p := startPackage(t, t.TempDir())
	startRun(t, p, params("x_in", script(`read a; read b; echo "got $a and $b"`)))
	if err := p.call(protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: ref("x_in", 1), Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.call(protocol.MethodExecutorResume, sdk.ExecutorResumeParams{ExecutionRef: ref("x_in", 1), Text: "two"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, p, "x_in", 1); got.State != sdk.OutcomeCompleted {
		t.Fatalf("wait %+v", got)
	}
	if out := p.artifact(StdoutArtifact); out != "got one and two\n" {
		t.Errorf("stdout %q", out)
	}
	for _, tc := range []struct {
		name string
		ref  sdk.ExecutionRef
		want *protocol.Error
	}{
		{"after the command ended", ref("x_in", 1), sdk.ErrNotAccepting},
		{"under a stale epoch", ref("x_in", 0), sdk.ErrConflict},
		{"to an execution never started", ref("x_ghost", 1), sdk.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.call(protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: tc.ref, Text: "late"}, nil)
			if !errors.Is(err, tc.want) {
				t.Errorf("inject: %v, want %s", err, tc.want.Code)
			}
		})
	}
}

// TestInterruptSendsSIGINTAndLiveShowsOutputSoFar: live answers the tails
// while the command runs; interrupt reaches the command's SIGINT trap;
// once it ended, live is not_live.
func TestInterruptSendsSIGINTAndLiveShowsOutputSoFar(t *testing.T) {
	p := startPackage(t, t.TempDir())
	startRun(t, p, params("x_int", script(`trap 'echo interrupted; exit 0' INT; echo ready; echo warming >&2; while :; do sleep 0.1; done`)))
	live := liveUntil(t, p, "x_int", 1, "ready")
	if live.Outputs[0].Name != StdoutArtifact || live.Outputs[1].Name != StderrArtifact || live.Outputs[0].Size != int64(len("ready\n")) {
		t.Errorf("live %+v", live)
	}
	if err := p.call(protocol.MethodExecutorInterrupt, ref("x_int", 1), nil); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, p, "x_int", 1); got.State != sdk.OutcomeCompleted {
		t.Fatalf("wait %+v", got)
	}
	if out := p.artifact(StdoutArtifact); out != "ready\ninterrupted\n" {
		t.Errorf("stdout %q", out)
	}
	if err := p.call(protocol.MethodExecutorLive, sdk.ExecutorLiveParams{ExecutionRef: ref("x_int", 1)}, nil); !errors.Is(err, sdk.ErrNotLive) {
		t.Errorf("live after the end: %v, want not_live", err)
	}
}

// TestStopEndsTheWholeGroupWithEvidence: a command that dies of SIGTERM is
// stopped by it; one that ignores it (and its background child) by SIGKILL
// after the grace; either way nothing of the group is left, the evidence
// says which check proved it, and the execution fails as stopped. A second
// stop finds nothing running.
func TestStopEndsTheWholeGroupWithEvidence(t *testing.T) {
	p := startPackage(t, t.TempDir())
	for _, tc := range []struct {
		name, script, evidence string
	}{
		{"SIGTERM suffices", `sleep 300 & echo ready; wait`, "SIGTERM to process group"},
		{"SIGTERM ignored", `trap '' TERM; sleep 300 & echo ready; wait; wait`, "SIGKILL after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			execution := "x_stop_" + strings.Fields(tc.name)[1]
			rec := startRun(t, p, params(execution, script(tc.script)))
			liveUntil(t, p, execution, 1, "ready")
			if n := len(members(t, rec.PID, rec.StartTicks)); n < 2 {
				t.Fatalf("the group has %d processes, want the wrapper, the shell and sleep", n)
			}
			var res sdk.ExecutorStopResult
			if err := p.call(protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref(execution, 1)}, &res); err != nil {
				t.Fatal(err)
			}
			if !res.Stopped || !strings.Contains(res.Evidence, tc.evidence) || !strings.Contains(res.Evidence, "/proc listed no process") {
				t.Errorf("stop %+v, want stopped with evidence %q", res, tc.evidence)
			}
			if left := members(t, rec.PID, rec.StartTicks); len(left) != 0 {
				t.Errorf("processes %v of the group outlived the stop", left)
			}
			if got := waitFor(t, p, execution, 1); got.State != sdk.OutcomeFailed || !strings.HasPrefix(got.Reason, "stopped") {
				t.Errorf("wait %+v, want failed as stopped", got)
			}
			if err := p.call(protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref(execution, 1)}, &res); err != nil || !res.Stopped || !strings.Contains(res.Evidence, "no process of") {
				t.Errorf("second stop %+v, %v", res, err)
			}
		})
	}
}

// TestTimeoutStopsTheAttemptAndFailsIt: timeout_seconds ends a command
// that runs longer.
func TestTimeoutStopsTheAttemptAndFailsIt(t *testing.T) {
	p := startPackage(t, t.TempDir())
	rec := startRun(t, p, params("x_slow", `{"command":"sleep 300","timeout_seconds":1}`))
	got := waitFor(t, p, "x_slow", 1)
	if got.State != sdk.OutcomeFailed || !strings.HasPrefix(got.Reason, "timed out after 1 seconds") {
		t.Errorf("wait %+v, want failed as timed out", got)
	}
	if left := members(t, rec.PID, rec.StartTicks); len(left) != 0 {
		t.Errorf("processes %v outlived the timeout", left)
	}
}

// TestARestartedPackageReadoptsTheRunningCommand: the package is killed
// mid-execution; the command runs on; a new process of the package adopts
// it by its metadata under a new epoch, takes input for it, and its wait
// answers when it ends, with the whole output, also what was written while
// no package ran.
func TestARestartedPackageReadoptsTheRunningCommand(t *testing.T) {
	state := t.TempDir()
	first := startPackage(t, state)
	rec := startRun(t, first, params("x_adopt", script(`echo before; read line; echo "after $line"`)))
	liveUntil(t, first, "x_adopt", 1, "before")
	_, persisted := first.lastRecovery()
	first.crash()
	if info, err := proc.Stat(rec.PID); err != nil || info.StartTicks != rec.StartTicks {
		t.Fatal("the command died with its package")
	}

	second := startPackage(t, state)
	rp := params("x_adopt", script("unused"))
	rp.Epoch = 2
	raw, _ := json.Marshal(persisted)
	if err := second.call(protocol.MethodExecutorRecover, sdk.ExecutorRecoverParams{ExecutorRunParams: rp, Recovery: raw}, nil); err != nil {
		t.Fatalf("recover: %v", err)
	}
	again, _ := second.lastRecovery()
	if again.Epoch != 2 {
		t.Errorf("the adopter persisted under epoch %d, want 2", again.Epoch)
	}
	if err := second.call(protocol.MethodExecutorWait, ref("x_adopt", 1), nil); !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("wait under the superseded epoch: %v, want conflict", err)
	}
	if err := second.call(protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: ref("x_adopt", 2), Text: "go"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, second, "x_adopt", 2); got.State != sdk.OutcomeCompleted || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("wait %+v", got)
	}
	if out := second.artifact(StdoutArtifact); out != "before\nafter go\n" {
		t.Errorf("the adopter's stdout artifact %q", out)
	}
}

// TestRecoverAdoptsOnlyWhatItCanProve: a live pid with another start time,
// a gone process that recorded nothing, and metadata that is not the
// executor's are not adoptable; a command that ended while no package ran
// is adopted settled, with the exit status its wrapper recorded.
func TestRecoverAdoptsOnlyWhatItCanProve(t *testing.T) {
	state := t.TempDir()
	first := startPackage(t, state)
	running := startRun(t, first, params("x_running", script(`read line`)))
	ended := startRun(t, first, params("x_ended", script(`exit 4`)))
	if got := waitFor(t, first, "x_ended", 1); got.ExitCode == nil || *got.ExitCode != 4 {
		t.Fatalf("wait %+v", got)
	}
	first.crash()

	second := startPackage(t, state)
	recoverWith := func(execution string, rec any) error {
		rp := params(execution, script("unused"))
		rp.Epoch = 2
		raw, _ := json.Marshal(rec)
		return second.call(protocol.MethodExecutorRecover, sdk.ExecutorRecoverParams{ExecutorRunParams: rp, Recovery: raw}, nil)
	}
	otherTicks := running
	otherTicks.StartTicks++
	goneRec := ended
	goneRec.Exit = filepath.Join(t.TempDir(), "exit")
	for _, tc := range []struct {
		name string
		rec  any
	}{
		{"a live pid with another start time", otherTicks},
		{"a gone process with no exit status", goneRec},
		{"metadata of another executor", map[string]string{"session": "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := recoverWith("x_other", tc.rec); !errors.Is(err, sdk.ErrNotAdoptable) {
				t.Errorf("recover: %v, want not_adoptable", err)
			}
		})
	}
	if err := second.call(protocol.MethodExecutorWait, ref("x_other", 2), nil); !errors.Is(err, sdk.ErrNotFound) {
		t.Errorf("a refused adoption is waited on: %v", err)
	}
	if info, err := proc.Stat(running.PID); err != nil || info.StartTicks != running.StartTicks {
		t.Error("a refused adoption disturbed the process whose pid it named")
	}

	if err := recoverWith("x_ended", ended); err != nil {
		t.Fatalf("recover an ended command: %v", err)
	}
	if got := waitFor(t, second, "x_ended", 2); got.State != sdk.OutcomeFailed || got.ExitCode == nil || *got.ExitCode != 4 {
		t.Errorf("wait %+v, want failed with exit 4", got)
	}
}

// TestPruneRemovesOnlyLongEndedRuns: an ended run older than KeepRuns goes,
// a recent one and one with no exit status (perhaps still running) stay.
func TestPruneRemovesOnlyLongEndedRuns(t *testing.T) {
	runs := t.TempDir()
	now := time.Now()
	old := now.Add(-KeepRuns - time.Hour)
	for name, exit := range map[string]*time.Time{"x_old": &old, "x_recent": &now, "x_running": nil} {
		dir := filepath.Join(runs, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if exit != nil {
			path := filepath.Join(dir, "exit")
			if err := os.WriteFile(path, []byte("0\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, *exit, *exit); err != nil {
				t.Fatal(err)
			}
		}
	}
	e := &executor{runs: map[string]*run{}}
	e.prune(runs, now)
	for name, want := range map[string]bool{"x_old": false, "x_recent": true, "x_running": true} {
		if _, err := os.Stat(filepath.Join(runs, name)); (err == nil) != want {
			t.Errorf("%s kept %v, want %v", name, err == nil, want)
		}
	}
}

// members lists the live processes of the group pgid started at or after
// since; a /proc that cannot be listed fails the test.
func members(t *testing.T, pgid int, since uint64) []int {
	t.Helper()
	m, err := proc.GroupMembers(pgid, since)
	if err != nil {
		t.Fatalf("listing process group %d: %v", pgid, err)
	}
	return m
}
