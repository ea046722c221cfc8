package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type checksInput struct {
	Ref string `json:"ref"`
}

// waitKeeper declares a wait operation whose Waits only an Event of type
// checks.passed wakes, and an environment layer naming the connection.
func waitKeeper(layer sdk.RunEnvironmentFunc) *sdk.Extension {
	return sdk.New("gk").
		Operation("gk.await", sdk.Waiter(func(_ context.Context, r *sdk.Request, in checksInput) (sdk.WaitPlan, error) {
			return sdk.WaitPlan{Description: "checks on " + in.Ref + " for " + r.Authority.Work, TimeoutSeconds: 60}, nil
		})).
		Operation("gk.note", sdk.Handler(func(context.Context, *sdk.Request, checksInput) (struct{}, error) { return struct{}{}, nil })).
		DependencyFilter(func(_ context.Context, _ *sdk.Request, p sdk.DependencyFilterParams) (bool, error) {
			if p.Event.Type == "gk.broken" {
				return false, errors.New("cannot read it")
			}
			return p.Event.Type == "checks.passed" && p.Wait.Owner == "gk", nil
		}).
		RunEnvironment(layer)
}

// TestWaiterDependencyFilterAndRunEnvironmentDeclareAndServe: a Waiter is
// declared a wait operation and served over operation.wait (its input
// checked), not operation.call; DependencyFilter and RunEnvironment
// declare their surfaces, the manifest validates, and each answers over
// the wire; a layer setting a host variable is refused before it is sent.
func TestWaiterDependencyFilterAndRunEnvironmentDeclareAndServe(t *testing.T) {
	layer := func(_ context.Context, _ *sdk.Request, p sdk.RunEnvironmentParams) (map[string]string, error) {
		if p.Connection == "forger" {
			return map[string]string{protocol.EnvToken: "x"}, nil
		}
		return map[string]string{"GK_CONNECTION": p.Connection}, nil
	}
	x := waitKeeper(layer)
	m := x.Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !m.Provides.DependencyFilter || !m.Provides.RunEnvironment {
		t.Fatalf("provides %+v", m.Provides)
	}
	if op, _ := m.Operation("gk.await"); op.Kind != protocol.OperationWait {
		t.Errorf("gk.await declared %q, want wait", op.Kind)
	}
	if op, _ := m.Operation("gk.note"); op.Kind != protocol.OperationHandler {
		t.Errorf("gk.note declared %q, want handler", op.Kind)
	}
	h := sdktest.New(t, x)
	ctx := context.Background()

	var plan protocol.OperationWaitResult
	err := h.Raw(ctx, protocol.MethodOperationWait, protocol.OperationWaitParams{Operation: "gk.await",
		Input: protocol.Payload{Data: jsontext.Value(`{"ref":"main"}`)}, Authority: protocol.Authority{Work: "w_1"}}, &plan)
	if err != nil || plan.Wait != (sdk.WaitPlan{Description: "checks on main for w_1", TimeoutSeconds: 60}) {
		t.Fatalf("operation.wait: %+v, %v", plan, err)
	}
	for _, tc := range []struct {
		name   string
		method string
		params any
		want   *protocol.Error
	}{
		{"a wait operation's input is checked", protocol.MethodOperationWait,
			protocol.OperationWaitParams{Operation: "gk.await", Input: protocol.Payload{Data: jsontext.Value(`{"ref":1}`)}}, protocol.ErrBadRequest},
		{"a handler is no wait operation", protocol.MethodOperationWait, protocol.OperationWaitParams{Operation: "gk.note"}, protocol.ErrUndeclared},
		{"a wait operation is not called as a handler", protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "gk.await"}, protocol.ErrUndeclared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Raw(ctx, tc.method, tc.params, nil); !errors.Is(err, tc.want) {
				t.Errorf("%v, want %s", err, tc.want.Code)
			}
		})
	}

	wait := protocol.DependencyWait{ID: "wt_1", Work: "w_1", Owner: "gk"}
	for _, tc := range []struct {
		event string
		match bool
		fails bool
	}{{"checks.passed", true, false}, {"checks.failed", false, false}, {"gk.broken", false, true}} {
		var res protocol.DependencyFilterResult
		err := h.Raw(ctx, protocol.MethodDependencyFilter, protocol.DependencyFilterParams{Wait: wait, Event: protocol.Event{ID: "ev_1", Type: tc.event}}, &res)
		if (err != nil) != tc.fails || res.Match != tc.match {
			t.Errorf("dependency.filter of %s: %+v, %v", tc.event, res, err)
		}
	}

	var env protocol.RunEnvironmentResult
	if err := h.Raw(ctx, protocol.MethodRunEnvironment, sdk.RunEnvironmentParams{Scope: "s", Binding: "b", Connection: "bot"}, &env); err != nil ||
		len(env.Env) != 1 || env.Env["GK_CONNECTION"] != "bot" {
		t.Errorf("run.environment: %+v, %v", env, err)
	}
	err = h.Raw(ctx, protocol.MethodRunEnvironment, sdk.RunEnvironmentParams{Connection: "forger"}, &env)
	if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), protocol.EnvToken) {
		t.Errorf("a layer setting %s: %v, want invalid naming it", protocol.EnvToken, err)
	}
}

// TestDependencyFilterWithoutAWaitOperationFailsValidation: the manifest
// rule holds for what the SDK derives, and registering twice panics.
func TestDependencyFilterWithoutAWaitOperationFailsValidation(t *testing.T) {
	filter := func(context.Context, *sdk.Request, sdk.DependencyFilterParams) (bool, error) { return true, nil }
	x := sdk.New("lone").DependencyFilter(filter)
	if err := x.Manifest.Validate(); err == nil || !strings.Contains(err.Error(), "dependency_filter") {
		t.Errorf("validate: %v, want the dependency_filter rule", err)
	}
	for name, fn := range map[string]func(){
		"DependencyFilter": func() { sdk.New("a").DependencyFilter(filter).DependencyFilter(filter) },
		"RunEnvironment": func() {
			layer := func(context.Context, *sdk.Request, sdk.RunEnvironmentParams) (map[string]string, error) {
				return nil, nil
			}
			sdk.New("a").RunEnvironment(layer).RunEnvironment(layer)
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), name) {
					t.Errorf("panic %v, want one naming %s", r, name)
				}
			}()
			fn()
		})
	}
}
