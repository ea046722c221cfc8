package sdk_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// required are an executor's three required funcs; each records its call
// under the executor's name.
func required(name string, seen *sync.Map) sdk.ExecutorFuncs {
	return sdk.ExecutorFuncs{
		Run: func(_ context.Context, r *sdk.Request, p sdk.ExecutorRunParams) (sdk.ExecutorRunResult, error) {
			seen.Store(name+":run", r.Name+"/"+p.Execution)
			return sdk.ExecutorRunResult{Recovery: jsontext.Value(`{"by":"` + name + `"}`)}, nil
		},
		Wait: func(_ context.Context, r *sdk.Request, ref sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
			seen.Store(name+":wait", r.Name+"/"+ref.Execution)
			return sdk.ExecutorWaitResult{State: sdk.OutcomeCompleted, Reason: name}, nil
		},
		Recover: func(_ context.Context, r *sdk.Request, p sdk.ExecutorRecoverParams) error {
			seen.Store(name+":recover", string(p.Recovery))
			return nil
		},
	}
}

// every is an executor with every optional func set too.
func every(name string, seen *sync.Map) sdk.ExecutorFuncs {
	f := required(name, seen)
	f.Stop = func(_ context.Context, _ *sdk.Request, p sdk.ExecutorStopParams) (sdk.ExecutorStopResult, error) {
		return sdk.ExecutorStopResult{Stopped: true, Evidence: "gone " + p.Execution}, nil
	}
	f.Interrupt = func(_ context.Context, _ *sdk.Request, ref sdk.ExecutionRef) error {
		seen.Store(name+":interrupt", ref.Execution)
		return nil
	}
	f.Inject = func(_ context.Context, _ *sdk.Request, p sdk.ExecutorInjectParams) error {
		seen.Store(name+":inject", p.Text)
		return nil
	}
	f.Resume = func(_ context.Context, _ *sdk.Request, p sdk.ExecutorResumeParams) error {
		seen.Store(name+":resume", p.Text)
		return nil
	}
	f.Live = func(_ context.Context, _ *sdk.Request, p sdk.ExecutorLiveParams) (sdk.ExecutorLiveResult, error) {
		return sdk.ExecutorLiveResult{Outputs: []sdk.LiveOutput{{Name: "stdout", Size: int64(p.Tail)}}}, nil
	}
	f.Forget = func(_ context.Context, _ *sdk.Request, ref sdk.ExecutionRef) error {
		seen.Store(name+":forget", ref.Execution)
		return nil
	}
	return f
}

// TestExecutorDeclaresControlsAndCapabilitiesFromItsFuncs: the declaration
// follows the funcs set, so an executor never declares a control it does
// not serve, nor serves one it does not declare.
func TestExecutorDeclaresControlsAndCapabilitiesFromItsFuncs(t *testing.T) {
	var seen sync.Map
	for _, tc := range []struct {
		name     string
		funcs    sdk.ExecutorFuncs
		opts     []sdk.ExecutorOption
		controls []string
		want     sdk.Executor
	}{
		{"required funcs alone declare nothing optional", required("acme-bare", &seen), nil, nil,
			sdk.Executor{Name: "acme-bare"}},
		{"every func declares stop, forget, live, interrupt, inject and resume", every("acme-full", &seen), nil,
			[]string{protocol.ControlStop, protocol.ControlForget, protocol.ControlLive},
			sdk.Executor{Name: "acme-full", Capabilities: protocol.Capabilities{Interrupt: true, Inject: true, Resume: true}}},
		{"options set the pool, the fields and the toolbelt", required("acme-jobs", &seen),
			[]sdk.ExecutorOption{sdk.JobsPool(), sdk.ExecutorFields(sdk.Field{Name: "argv"}), sdk.ExecutorToolbelt("cli")}, nil,
			sdk.Executor{Name: "acme-jobs", Pool: "jobs", Fields: []sdk.Field{{Name: "argv"}}, Capabilities: protocol.Capabilities{Toolbelt: []string{"cli"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := sdk.New("acme").Executor(tc.want.Name, tc.funcs, tc.opts...)
			if err := x.Manifest.Validate(); err != nil {
				t.Fatal(err)
			}
			got := x.Manifest.Provides.Executors
			tc.want.Controls = tc.controls
			if len(got) != 1 || got[0].Name != tc.want.Name || !slices.Equal(got[0].Controls, tc.want.Controls) ||
				got[0].Pool != tc.want.Pool || len(got[0].Fields) != len(tc.want.Fields) ||
				got[0].Capabilities.Interrupt != tc.want.Capabilities.Interrupt || got[0].Capabilities.Inject != tc.want.Capabilities.Inject ||
				got[0].Capabilities.Resume != tc.want.Capabilities.Resume ||
				!slices.Equal(got[0].Capabilities.Toolbelt, tc.want.Capabilities.Toolbelt) {
				t.Errorf("declared %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestExecutorRegistrationMistakesPanicNamingIt: a missing required func
// and a second registration of a name panic; a second executor of another
// name is fine.
func TestExecutorRegistrationMistakesPanicNamingIt(t *testing.T) {
	var seen sync.Map
	noRecover := required("a", &seen)
	noRecover.Recover = nil
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"Recover missing", func() { sdk.New("x").Executor("a", noRecover) }},
		{"registered twice", func() { sdk.New("x").Executor("a", required("a", &seen)).Executor("a", required("a", &seen)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), `sdk: Executor "a"`) {
					t.Errorf("panic %v, want one naming executor a", r)
				}
			}()
			tc.fn()
		})
	}
	sdk.New("x").Executor("a", required("a", &seen)).Executor("b", required("b", &seen))
}

// TestExecutorMethodsDispatchByTheExecutorTheyName: over the wire, each
// executor method reaches the funcs of the executor its params name; a
// control the executor does not declare and an executor the package does
// not declare are refused undeclared, and a call naming no executor of a
// package with two is invalid_params.
func TestExecutorMethodsDispatchByTheExecutorTheyName(t *testing.T) {
	var seen sync.Map
	x := sdk.New("pair").Executor("pair-full", every("full", &seen)).Executor("pair-bare", required("bare", &seen))
	h := sdktest.New(t, x)
	ctx := context.Background()
	ref := func(executor string) sdk.ExecutionRef {
		return sdk.ExecutionRef{Execution: "x_1", Epoch: 1, Executor: executor}
	}

	var run sdk.ExecutorRunResult
	if err := h.Raw(ctx, protocol.MethodExecutorRun, sdk.ExecutorRunParams{Execution: "x_1", Executor: "pair-bare"}, &run); err != nil {
		t.Fatal(err)
	}
	if v, _ := seen.Load("bare:run"); v != "pair-bare/x_1" || string(run.Recovery) != `{"by":"bare"}` {
		t.Errorf("run on bare: seen %v, result %s", v, run.Recovery)
	}
	if _, ran := seen.Load("full:run"); ran {
		t.Error("run on bare reached full's Run")
	}
	var wait sdk.ExecutorWaitResult
	if err := h.Raw(ctx, protocol.MethodExecutorWait, ref("pair-full"), &wait); err != nil || wait.Reason != "full" {
		t.Errorf("wait on full: %+v, %v", wait, err)
	}
	if err := h.Raw(ctx, protocol.MethodExecutorRecover, sdk.ExecutorRecoverParams{ExecutorRunParams: sdk.ExecutorRunParams{Execution: "x_1", Executor: "pair-full"}, Recovery: jsontext.Value(`{"pid":7}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := seen.Load("full:recover"); v != `{"pid":7}` {
		t.Errorf("recover got %v", v)
	}
	if err := h.Raw(ctx, protocol.MethodExecutorInject, sdk.ExecutorInjectParams{ExecutionRef: ref("pair-full"), Text: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := seen.Load("full:inject"); v != "hi" {
		t.Errorf("inject got %v", v)
	}
	if err := h.Raw(ctx, protocol.MethodExecutorResume, sdk.ExecutorResumeParams{ExecutionRef: ref("pair-full"), Text: "go on"}, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := seen.Load("full:resume"); v != "go on" {
		t.Errorf("resume got %v", v)
	}
	var stop sdk.ExecutorStopResult
	if err := h.Raw(ctx, protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref("pair-full")}, &stop); err != nil || !stop.Stopped {
		t.Errorf("stop on full: %+v, %v", stop, err)
	}
	var live sdk.ExecutorLiveResult
	if err := h.Raw(ctx, protocol.MethodExecutorLive, sdk.ExecutorLiveParams{ExecutionRef: ref("pair-full"), Tail: 9}, &live); err != nil || len(live.Outputs) != 1 || live.Outputs[0].Size != 9 {
		t.Errorf("live on full: %+v, %v", live, err)
	}
	if err := h.Raw(ctx, protocol.MethodExecutorForget, ref("pair-full"), nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := seen.Load("full:forget"); v != "x_1" {
		t.Errorf("forget got %v", v)
	}

	for _, tc := range []struct {
		name   string
		method string
		params any
		want   *protocol.Error
	}{
		{"interrupt on an executor without it", protocol.MethodExecutorInterrupt, ref("pair-bare"), protocol.ErrUndeclared},
		{"resume on an executor without it", protocol.MethodExecutorResume, sdk.ExecutorResumeParams{ExecutionRef: ref("pair-bare")}, protocol.ErrUndeclared},
		{"stop on an executor without it", protocol.MethodExecutorStop, sdk.ExecutorStopParams{ExecutionRef: ref("pair-bare")}, protocol.ErrUndeclared},
		{"live on an executor without it", protocol.MethodExecutorLive, sdk.ExecutorLiveParams{ExecutionRef: ref("pair-bare")}, protocol.ErrUndeclared},
		{"forget on an executor without it", protocol.MethodExecutorForget, ref("pair-bare"), protocol.ErrUndeclared},
		{"run on an undeclared executor", protocol.MethodExecutorRun, sdk.ExecutorRunParams{Execution: "x_1", Executor: "pair-ghost"}, protocol.ErrUndeclared},
		{"wait naming no executor of two", protocol.MethodExecutorWait, ref(""), protocol.ErrInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Raw(ctx, tc.method, tc.params, nil); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %s", tc.method, err, tc.want.Code)
			}
		})
	}
	if _, ran := seen.Load("bare:interrupt"); ran {
		t.Error("a refused interrupt ran")
	}

	// A package with one executor takes a call naming none.
	one := sdktest.New(t, sdk.New("solo").Executor("solo", required("only", &seen)))
	if err := one.Raw(ctx, protocol.MethodExecutorWait, ref(""), &wait); err != nil || wait.Reason != "only" {
		t.Errorf("wait naming no executor of one: %+v, %v", wait, err)
	}
}

// TestHostPersistRecoveryAndWaitProgressThroughTheWire: both reach the
// host as their methods with the params the host reads; metadata over the
// bound is refused too_large without a call, and the host's refusal comes
// back with its code.
func TestHostPersistRecoveryAndWaitProgressThroughTheWire(t *testing.T) {
	type meta struct {
		PID int `json:"pid"`
	}
	calls := make(chan error, 4)
	var big bool
	f := sdk.ExecutorFuncs{
		Run: func(ctx context.Context, r *sdk.Request, p sdk.ExecutorRunParams) (sdk.ExecutorRunResult, error) {
			ref := sdk.ExecutionRef{Execution: p.Execution, Epoch: p.Epoch, Executor: p.Executor}
			if big {
				calls <- r.Host.PersistRecovery(ctx, ref, jsontext.Value(`"`+strings.Repeat("x", protocol.MaxRecoveryBytes)+`"`))
				return sdk.ExecutorRunResult{}, nil
			}
			calls <- r.Host.PersistRecovery(ctx, ref, meta{PID: 42})
			calls <- r.Host.WaitProgress(ctx, p.Work.ID, "3 of 5")
			return sdk.ExecutorRunResult{}, nil
		},
		Wait: func(context.Context, *sdk.Request, sdk.ExecutionRef) (sdk.ExecutorWaitResult, error) {
			return sdk.ExecutorWaitResult{}, nil
		},
		Recover: func(context.Context, *sdk.Request, sdk.ExecutorRecoverParams) error { return nil },
	}
	x := sdk.New("keeper").Executor("keeper", f)

	var mu sync.Mutex
	var persisted []protocol.ExecutionPersistRecoveryParams
	var progress []protocol.WaitProgressParams
	table := jsonrpc.NewTable().
		HandleRaw(protocol.MethodExecutionPersistRecovery, func(_ context.Context, raw jsontext.Value) (any, error) {
			var p protocol.ExecutionPersistRecoveryParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			persisted = append(persisted, p)
			mu.Unlock()
			if p.Epoch < 2 {
				return nil, protocol.Errorf(protocol.ErrConflict, "epoch %d is superseded", p.Epoch)
			}
			return protocol.ExecutionPersistRecoveryResult{}, nil
		}).
		HandleRaw(protocol.MethodWaitProgress, func(_ context.Context, raw jsontext.Value) (any, error) {
			var p protocol.WaitProgressParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
			return protocol.WaitProgressResult{}, nil
		})
	hostR, extW, _ := os.Pipe()
	extR, hostW, _ := os.Pipe()
	go sdk.ServeStreams(context.Background(), x, extR, extW, nil)
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{Handlers: table})
	t.Cleanup(func() { hostW.Close(); conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: protocol.Versions}, nil); err != nil {
		t.Fatal(err)
	}
	run := func(epoch uint64) {
		t.Helper()
		p := sdk.ExecutorRunParams{Execution: "x_7", Epoch: epoch, Executor: "keeper", Work: sdk.WorkView{ID: "w_1"}}
		if err := conn.Call(ctx, protocol.MethodExecutorRun, p, nil); err != nil {
			t.Fatal(err)
		}
	}

	run(2)
	if err := <-calls; err != nil {
		t.Fatalf("persist_recovery: %v", err)
	}
	if err := <-calls; err != nil {
		t.Fatalf("wait.progress: %v", err)
	}
	mu.Lock()
	if len(persisted) != 1 || persisted[0].Execution != "x_7" || persisted[0].Epoch != 2 || persisted[0].Executor != "keeper" || string(persisted[0].Recovery) != `{"pid":42}` {
		t.Errorf("persisted %+v", persisted)
	}
	if len(progress) != 1 || progress[0].Work != "w_1" || progress[0].Progress != "3 of 5" {
		t.Errorf("progress %+v", progress)
	}
	mu.Unlock()

	run(1)
	if err := <-calls; !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("persist_recovery under a superseded epoch: %v, want the host's conflict", err)
	}
	<-calls

	big = true
	run(2)
	if err := <-calls; !errors.Is(err, sdk.ErrTooLarge) {
		t.Errorf("metadata over the bound: %v, want too_large", err)
	}
	mu.Lock()
	if len(persisted) != 2 {
		t.Errorf("the host saw %d persist calls, want 2: oversized metadata must not be sent", len(persisted))
	}
	mu.Unlock()
}
