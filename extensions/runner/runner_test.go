package runner_test

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/extensions/runner"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// deadline bounds every wait for a job: generous, for a loaded machine.
const deadline = 60 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// needs skips a test on a system the runner does not serve.
func needs(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the runner needs Linux's /proc, which this system lacks")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("the runner needs /bin/sh, which this system lacks")
	}
}

// script is a binding config running sh -c src.
func script(src string, extra ...string) jsontext.Value {
	c := map[string]any{"command": "sh", "args": []string{"-c", src}}
	for i := 0; i+1 < len(extra); i += 2 {
		n, _ := strconv.Atoi(extra[i+1])
		c[extra[i]] = n
	}
	raw, _ := json.Marshal(c)
	return raw
}

func runParams(id string, epoch uint64, config jsontext.Value) sdk.ExecutorRunParams {
	return sdk.ExecutorRunParams{Execution: id, Epoch: epoch, Executor: runner.ExecutorName, Attempt: 1,
		Work: sdk.WorkView{ID: "w1"}, Binding: sdk.RunBinding{Name: "job", Config: config}}
}

func ref(id string, epoch uint64) sdk.ExecutionRef {
	return sdk.ExecutionRef{Execution: id, Epoch: epoch, Executor: runner.ExecutorName}
}

// run starts a job and kills its group when the test ends, whatever
// became of it, so no test leaves a process behind. The host holds the
// execution first, as the scheduler does before executor.run, so the
// job's recovery metadata is persisted under its lease.
func run(t *testing.T, h *sdktest.Harness, p sdk.ExecutorRunParams) runner.Recovery {
	t.Helper()
	h.Host().PutExecution(ref(p.Execution, p.Epoch), p.Work.ID)
	var res sdk.ExecutorRunResult
	if err := h.Raw(testCtx(t), protocol.MethodExecutorRun, p, &res); err != nil {
		t.Fatalf("run: %v", err)
	}
	var rec runner.Recovery
	if err := json.Unmarshal(res.Recovery, &rec); err != nil || rec.PID <= 1 || rec.StartTime == 0 {
		t.Fatalf("run answered recovery %s (%v); want a pid and a start time", res.Recovery, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-rec.PID, syscall.SIGKILL) })
	return rec
}

func wait(t *testing.T, h *sdktest.Harness, r sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
	t.Helper()
	var res sdk.ExecutorWaitResult
	err := h.Raw(testCtx(t), protocol.MethodExecutorWait, r, &res)
	return res, err
}

// mustWait waits for the execution to settle, failing the test on error.
func mustWait(t *testing.T, h *sdktest.Harness, r sdk.ExecutionRef) sdk.ExecutorWaitResult {
	t.Helper()
	res, err := wait(t, h, r)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return res
}

// outputHas waits for the job's output to hold want.
func outputHas(t *testing.T, rec runner.Recovery, want string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		out, _ := os.ReadFile(rec.Output)
		if strings.Contains(string(out), want) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the job's output never held %q; it holds %q", want, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupGone fails unless the job's group soon has no process at all, not
// even an exited one: kill -0 answers ESRCH. (An exited member the job
// orphaned lingers until init reaps it, so this waits for that.)
func groupGone(t *testing.T, rec runner.Recovery) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		err := syscall.Kill(-rec.PID, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(end) {
			t.Errorf("process group %d still has a process (kill -0: %v)", rec.PID, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exitCode(res sdk.ExecutorWaitResult) string {
	if res.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*res.ExitCode)
}

func TestManifestDeclaresTheRunnerExecutor(t *testing.T) {
	m := runner.Extension().Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !protocol.IsHostRun(m.Command, runner.Name) {
		t.Errorf("command %v, want the binary's extension-run runner", m.Command)
	}
	if _, err := protocol.ParseCertification(runner.Certification); err != nil {
		t.Errorf("certification: %v", err)
	}
	ex := m.Provides.Executors
	if len(ex) != 1 || ex[0].Name != runner.ExecutorName || ex[0].Pool != "jobs" ||
		!ex[0].Capabilities.Interrupt || !ex[0].Capabilities.Inject || ex[0].Capabilities.Resume {
		t.Fatalf("executors %+v, want runner in the jobs pool with interrupt and inject", ex)
	}
	for _, c := range []string{protocol.ControlStop, protocol.ControlForget} {
		if !strings.Contains(strings.Join(ex[0].Controls, ","), c) {
			t.Errorf("controls %v lack %s", ex[0].Controls, c)
		}
	}
	if strings.Contains(strings.Join(ex[0].Controls, ","), protocol.ControlLive) {
		t.Errorf("controls %v declare live, which runner does not serve", ex[0].Controls)
	}
}

func TestValidateRefusesABadJobNamingTheField(t *testing.T) {
	h := sdktest.New(t, runner.Extension())
	for _, tc := range []struct {
		name, config, want string
	}{
		{"no config", ``, "needs a config"},
		{"no command", `{"args":["x"]}`, "command is empty"},
		{"an unknown field", `{"command":"true","retries":3}`, "retries"},
		{"a grace over the bound", `{"command":"true","stop_grace_seconds":301}`, "stop_grace_seconds is 301"},
		{"a negative grace", `{"command":"true","stop_grace_seconds":-1}`, "stop_grace_seconds is -1"},
		{"args that are not strings", `{"command":"true","args":[1]}`, "args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var config jsontext.Value
			if tc.config != "" {
				config = jsontext.Value(tc.config)
			}
			_, err := h.Validate(testCtx(t), sdk.ValidateParams{Kind: protocol.ValidateExecutor, Type: runner.ExecutorName, Config: config})
			if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("validate: %v, want invalid saying %q", err, tc.want)
			}
		})
	}
	good := `{"command":"sh","args":["-c","true"],"stop_grace_seconds":0}`
	if _, err := h.Validate(testCtx(t), sdk.ValidateParams{Kind: protocol.ValidateExecutor, Type: runner.ExecutorName, Config: jsontext.Value(good)}); err != nil {
		t.Errorf("a good job: %v", err)
	}
}

func TestRunThenWaitSettlesByExitStatus(t *testing.T) {
	needs(t)
	h := sdktest.New(t, runner.Extension())
	for i, tc := range []struct {
		name   string
		config jsontext.Value
		env    map[string]string
		state  string
		code   string
	}{
		{"exit 0 completes", script(`exit 0`), nil, sdk.OutcomeCompleted, "0"},
		{"exit 3 fails with its code", script(`exit 3`), nil, sdk.OutcomeFailed, "3"},
		{"a missing command fails 127", jsontext.Value(`{"command":"/nonexistent/runner-test-command"}`), nil, sdk.OutcomeFailed, "127"},
		{"the host's environment reaches the job", script(`test "$OPEN_CONDUIT_WORK" = w1`), map[string]string{protocol.EnvWork: "w1"}, sdk.OutcomeCompleted, "0"},
		{"a job seeing another value fails (control)", script(`test "$OPEN_CONDUIT_WORK" = w1`), map[string]string{protocol.EnvWork: "w2"}, sdk.OutcomeFailed, "1"},
		{"a job whose stdin is read to nothing still ends", script(`read -t 0 x; exit 0`), nil, sdk.OutcomeCompleted, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "x_settle" + strconv.Itoa(i)
			p := runParams(id, 1, tc.config)
			p.Env = tc.env
			rec := run(t, h, p)
			res := mustWait(t, h, ref(id, 1))
			if res.State != tc.state || exitCode(res) != tc.code {
				t.Errorf("wait = %s, exit code %s (%s); want %s, %s", res.State, exitCode(res), res.Reason, tc.state, tc.code)
			}
			groupGone(t, rec)
		})
	}
}

func TestRunRefusesWhatItCannotRunAndStartsNothing(t *testing.T) {
	needs(t)
	h := sdktest.New(t, runner.Extension())
	run(t, h, runParams("x_once", 1, script(`exit 0`)))
	for _, tc := range []struct {
		name string
		p    sdk.ExecutorRunParams
		want *protocol.Error
	}{
		{"a binding without a command", runParams("x_bad", 1, jsontext.Value(`{"args":["x"]}`)), protocol.ErrInvalid},
		{"an execution ID that is a path", runParams("../x", 1, script(`exit 0`)), protocol.ErrInvalid},
		{"an execution run twice", runParams("x_once", 1, script(`exit 0`)), protocol.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Raw(testCtx(t), protocol.MethodExecutorRun, tc.p, nil); !errors.Is(err, tc.want) {
				t.Fatalf("run: %v, want %s", err, tc.want.Code)
			}
		})
	}
	ents, _ := os.ReadDir(h.StateDir() + "/jobs")
	if len(ents) != 1 || ents[0].Name() != "x_once" {
		t.Errorf("jobs directory holds %v, want only x_once's", ents)
	}
}

func TestInjectReachesTheJobsStdin(t *testing.T) {
	needs(t)
	h := sdktest.New(t, runner.Extension())
	rec := run(t, h, runParams("x_inject", 1, script(`read a; read b; echo "got:$a,$b"; test "$a,$b" = "hello,world"`)))
	for _, line := range []string{"hello", "world"} {
		if err := h.Raw(testCtx(t), protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: ref("x_inject", 1), Text: line}, nil); err != nil {
			t.Fatalf("inject %q: %v", line, err)
		}
	}
	if res := mustWait(t, h, ref("x_inject", 1)); res.State != sdk.OutcomeCompleted {
		t.Errorf("wait = %+v, want completed: the job read both lines", res)
	}
	outputHas(t, rec, "got:hello,world")

	for _, tc := range []struct {
		name string
		p    sdk.ExecutorInjectParams
		want *protocol.Error
	}{
		{"a line after the job ended", sdk.ExecutorInjectParams{ExecutionRef: ref("x_inject", 1), Text: "late"}, protocol.ErrConflict},
		{"two lines at once", sdk.ExecutorInjectParams{ExecutionRef: ref("x_inject", 1), Text: "a\nb"}, protocol.ErrInvalid},
		{"a line over the bound", sdk.ExecutorInjectParams{ExecutionRef: ref("x_inject", 1), Text: strings.Repeat("l", runner.MaxInjectBytes)}, protocol.ErrTooLarge},
		{"an execution runner does not watch", sdk.ExecutorInjectParams{ExecutionRef: ref("x_unknown", 1), Text: "hi"}, protocol.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Raw(testCtx(t), protocol.MethodExecutorInject, tc.p, nil); !errors.Is(err, tc.want) {
				t.Errorf("inject: %v, want %s", err, tc.want.Code)
			}
		})
	}
}

func TestInterruptEndsAJobThatTrapsNothing(t *testing.T) {
	needs(t)
	if signal.Ignored(syscall.SIGINT) {
		t.Skip("this test process ignores SIGINT, and every job it starts would inherit that")
	}
	h := sdktest.New(t, runner.Extension())
	for i, tc := range []struct {
		name  string
		src   string
		state string
		code  string
	}{
		{"a job that traps nothing ends, status 130", `echo ready; sleep 600`, sdk.OutcomeFailed, "130"},
		{"a job that traps SIGINT decides how it ends (control)", `trap 'echo caught; exit 0' INT; echo ready; while :; do sleep 0.05; done`, sdk.OutcomeCompleted, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "x_int" + strconv.Itoa(i)
			rec := run(t, h, runParams(id, 1, script(tc.src)))
			outputHas(t, rec, "ready")
			res := interruptUntilEnded(t, h, ref(id, 1))
			if res.State != tc.state || exitCode(res) != tc.code {
				t.Errorf("wait = %s, exit code %s (%s); want %s, %s", res.State, exitCode(res), res.Reason, tc.state, tc.code)
			}
			groupGone(t, rec)
			if err := h.Raw(testCtx(t), protocol.MethodExecutorInterrupt, ref(id, 1), nil); !errors.Is(err, protocol.ErrConflict) {
				t.Errorf("interrupting the ended job: %v, want conflict", err)
			}
		})
	}
}

// interruptUntilEnded interrupts the job and waits for it to end, sending
// the interrupt again every 2 s while it runs. dash catches SIGINT while
// it runs a script, so a SIGINT that lands after "ready" but before the
// script forks its next command is taken by the shell alone, and the
// command it then forks never sees it: on a loaded machine the first
// interrupt can miss, as it would for an operator, who interrupts again.
func interruptUntilEnded(t *testing.T, h *sdktest.Harness, r sdk.ExecutionRef) sdk.ExecutorWaitResult {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		if err := h.Raw(testCtx(t), protocol.MethodExecutorInterrupt, r, nil); err != nil && !errors.Is(err, protocol.ErrConflict) {
			t.Fatalf("interrupt: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var res sdk.ExecutorWaitResult
		err := h.Raw(ctx, protocol.MethodExecutorWait, r, &res)
		cancel()
		switch {
		case err == nil:
			return res
		case time.Now().After(end):
			t.Fatalf("the job did not end within %s of interrupts: %v", deadline, err)
		}
	}
}

func TestStopEndsTheJobsGroupWithEvidence(t *testing.T) {
	needs(t)
	h := sdktest.New(t, runner.Extension())
	for i, tc := range []struct {
		name     string
		config   jsontext.Value
		ready    string
		evidence string
	}{
		{"a job that ends on SIGTERM", script(`echo ready; sleep 600`), "ready", "after SIGTERM"},
		{"a job that ignores SIGTERM is killed after the grace", script(`trap '' TERM; echo ready; while :; do sleep 0.05; done`, "stop_grace_seconds", "1"), "ready", "after SIGKILL"},
		{"a background process left by a job that exited", script(`sleep 600 & echo ready`), "ready", "after SIGTERM"},
		{"a job that had ended", script(`echo ready`), "ready", "no process of the job's group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "x_stop" + strconv.Itoa(i)
			rec := run(t, h, runParams(id, 1, tc.config))
			outputHas(t, rec, tc.ready)
			if strings.HasSuffix(tc.name, "had ended") || strings.Contains(tc.name, "background") {
				mustWait(t, h, ref(id, 1))
			}
			var res sdk.ExecutorStopResult
			if err := h.Raw(testCtx(t), protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref(id, 1)}, &res); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if !res.Stopped || !strings.Contains(res.Evidence, tc.evidence) {
				t.Errorf("stop = %+v, want stopped with evidence saying %q", res, tc.evidence)
			}
			t.Logf("evidence: %s", res.Evidence)
			groupGone(t, rec)
		})
	}
}

func TestStopOfAJobAnotherProcessStartedUsesItsMetadata(t *testing.T) {
	needs(t)
	first := sdktest.New(t, runner.Extension())
	rec := run(t, first, runParams("x_far", 1, script(`echo ready; sleep 600`)))
	outputHas(t, rec, "ready")
	raw, _ := json.Marshal(rec)
	second := sdktest.New(t, runner.Extension())
	var res sdk.ExecutorStopResult
	if err := second.Raw(testCtx(t), protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref("x_far", 2), Recovery: raw}, &res); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !res.Stopped || !strings.Contains(res.Evidence, "no process of the job's group") {
		t.Errorf("stop = %+v, want stopped with /proc evidence", res)
	}
	groupGone(t, rec)
	// Without metadata and with no job directory, there is nothing to stop.
	if err := second.Raw(testCtx(t), protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref("x_never", 1)}, &res); err != nil || !res.Stopped || !strings.Contains(res.Evidence, "no job directory") {
		t.Errorf("stop of a job never started: %+v, %v", res, err)
	}
}

func recoverParams(id string, epoch uint64, raw jsontext.Value) sdk.ExecutorRecoverParams {
	return sdk.ExecutorRecoverParams{ExecutorRunParams: runParams(id, epoch, script(`exit 0`)), Recovery: raw}
}

// TestRecoverReadoptsARunningJobAfterThePackageIsThrownAway: a second
// package object, knowing nothing but the metadata, adopts the job still
// running, injects into it and sees how it ends. The first stays open
// only so its state directory, which holds the job's files, stays too.
func TestRecoverReadoptsARunningJobAfterThePackageIsThrownAway(t *testing.T) {
	needs(t)
	first := sdktest.New(t, runner.Extension())
	rec := run(t, first, runParams("x_adopt", 1, script(`read a; echo "got:$a"; exit 4`)))
	raw, _ := json.Marshal(rec)

	second := sdktest.New(t, runner.Extension())
	if _, err := wait(t, second, ref("x_adopt", 2)); !errors.Is(err, protocol.ErrNotFound) {
		t.Fatalf("wait before recover: %v, want not_found", err)
	}
	if err := second.Raw(testCtx(t), protocol.MethodExecutorRecover, recoverParams("x_adopt", 2, raw), nil); err != nil {
		t.Fatalf("recover: %v", err)
	}
	if err := second.Raw(testCtx(t), protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: ref("x_adopt", 2), Text: "again"}, nil); err != nil {
		t.Fatalf("inject after recover: %v", err)
	}
	if _, err := wait(t, second, ref("x_adopt", 1)); !errors.Is(err, protocol.ErrConflict) {
		t.Errorf("wait under the superseded epoch: %v, want conflict", err)
	}
	res := mustWait(t, second, ref("x_adopt", 2))
	if res.State != sdk.OutcomeFailed || exitCode(res) != "4" {
		t.Errorf("wait = %s, exit code %s (%s); want failed, 4", res.State, exitCode(res), res.Reason)
	}
	outputHas(t, rec, "got:again")
	groupGone(t, rec)
}

func TestRecoverAdoptsAJobThatEndedUnwatchedWithItsStatus(t *testing.T) {
	needs(t)
	first := sdktest.New(t, runner.Extension())
	rec := run(t, first, runParams("x_ended", 1, script(`exit 5`)))
	mustWait(t, first, ref("x_ended", 1))
	raw, _ := json.Marshal(rec)
	second := sdktest.New(t, runner.Extension())
	if err := second.Raw(testCtx(t), protocol.MethodExecutorRecover, recoverParams("x_ended", 2, raw), nil); err != nil {
		t.Fatalf("recover: %v", err)
	}
	if res := mustWait(t, second, ref("x_ended", 2)); res.State != sdk.OutcomeFailed || exitCode(res) != "5" {
		t.Errorf("wait = %+v, want failed with 5", res)
	}
}

func TestRecoverRefusesAJobItCannotIdentify(t *testing.T) {
	needs(t)
	first := sdktest.New(t, runner.Extension())
	rec := run(t, first, runParams("x_ident", 1, script(`echo ready; sleep 600`)))
	outputHas(t, rec, "ready")
	with := func(f func(*runner.Recovery)) jsontext.Value {
		r := rec
		f(&r)
		raw, _ := json.Marshal(r)
		return raw
	}
	for _, tc := range []struct {
		name string
		raw  jsontext.Value
		want *protocol.Error // nil: adopted
	}{
		{"a wrong start time", with(func(r *runner.Recovery) { r.StartTime++ }), protocol.ErrNotAdoptable},
		{"another process's pid", with(func(r *runner.Recovery) { r.PID = os.Getpid() }), protocol.ErrNotAdoptable},
		{"another boot", with(func(r *runner.Recovery) { r.BootID = "not-this-boot" }), protocol.ErrNotAdoptable},
		{"files outside its directory", with(func(r *runner.Recovery) { r.Input = "/tmp/elsewhere" }), protocol.ErrNotAdoptable},
		{"metadata that is not runner's", jsontext.Value(`{"container":"abc"}`), protocol.ErrNotAdoptable},
		{"no metadata", nil, protocol.ErrNotAdoptable},
		{"the job's own metadata (control)", with(func(*runner.Recovery) {}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := sdktest.New(t, runner.Extension())
			err := second.Raw(testCtx(t), protocol.MethodExecutorRecover, recoverParams("x_ident", 2, tc.raw), nil)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("recover: %v, want adopted", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("recover: %v, want %s", err, tc.want.Code)
			}
			// A refusal leaves the job alone, and adopts nothing.
			if err := syscall.Kill(rec.PID, 0); err != nil {
				t.Errorf("the job's process is gone after a refused recover: %v", err)
			}
			if _, err := wait(t, second, ref("x_ident", 2)); !errors.Is(err, protocol.ErrNotFound) {
				t.Errorf("wait after a refused recover: %v, want not_found", err)
			}
		})
	}
}

func TestForgetDropsASettledExecutionOnly(t *testing.T) {
	needs(t)
	h := sdktest.New(t, runner.Extension())
	done := run(t, h, runParams("x_done", 1, script(`exit 0`)))
	mustWait(t, h, ref("x_done", 1))
	live := run(t, h, runParams("x_live", 1, script(`echo ready; sleep 600`)))
	outputHas(t, live, "ready")

	for _, tc := range []struct {
		name string
		id   string
		want *protocol.Error
		dir  bool // the job's directory after the call
	}{
		{"a running job is not forgotten", "x_live", protocol.ErrConflict, true},
		{"a settled job is", "x_done", nil, false},
		{"forgetting it again is no error", "x_done", nil, false},
		{"an execution runner never ran is no error", "x_never", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Raw(testCtx(t), protocol.MethodExecutorForget, ref(tc.id, 1), nil)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("forget: %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(h.StateDir() + "/jobs/" + tc.id); (err == nil) != tc.dir {
				t.Errorf("job directory exists: %v, want %v", err == nil, tc.dir)
			}
		})
	}
	if _, err := wait(t, h, ref("x_done", 1)); !errors.Is(err, protocol.ErrNotFound) {
		t.Errorf("wait after forget: %v, want not_found", err)
	}
	if err := syscall.Kill(live.PID, 0); err != nil {
		t.Errorf("the running job is gone after a refused forget: %v", err)
	}
	groupGone(t, done)
}

// TestRunWhoseMetadataTheHostRefusesStartsNothing: when the host refuses
// persist_recovery (a superseded lease), run answers the host's refusal
// and the job it had started does not run on.
func TestRunWhoseMetadataTheHostRefusesStartsNothing(t *testing.T) {
	needs(t)
	pids := make(chan int, 1)
	table := jsonrpc.NewTable().HandleRaw(protocol.MethodExecutionPersistRecovery, func(_ context.Context, raw jsontext.Value) (any, error) {
		var p protocol.ExecutionPersistRecoveryParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		var rec runner.Recovery
		_ = json.Unmarshal(p.Recovery, &rec)
		pids <- rec.PID
		return nil, protocol.Errorf(protocol.ErrConflict, "execution %s's lease epoch %d is superseded", p.Execution, p.Epoch)
	})
	hostR, extW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go sdk.ServeStreams(context.Background(), runner.Extension(), extR, extW, nil)
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{Handlers: table})
	t.Cleanup(func() { hostW.Close(); conn.Close() })
	ctx := testCtx(t)
	state := t.TempDir()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: protocol.Versions, StateDir: state}, nil); err != nil {
		t.Fatal(err)
	}
	err = conn.Call(ctx, protocol.MethodExecutorRun, runParams("x_fenced", 1, script(`sleep 600`)), nil)
	if !errors.Is(err, protocol.ErrConflict) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("run: %v, want the host's conflict", err)
	}
	pid := <-pids
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	groupGone(t, runner.Recovery{PID: pid})
	if _, err := os.Stat(state + "/jobs/x_fenced"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused job's directory remains: %v", err)
	}
}
