package engine

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// envPackages is fakeExec plus installed packages of the test's own: a
// Wait's owner answering dependency.filter (only through CallInTx, as a
// session does) and packages answering run.environment.
type envPackages struct {
	*fakeExec

	mu     sync.Mutex
	extra  map[string]*protocol.Manifest
	filter func(ctx context.Context, p protocol.DependencyFilterParams) (protocol.DependencyFilterResult, error)
	layers map[string]func(p protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error)
	// filters are the dependency.filter calls, made through CallInTx.
	filters []protocol.DependencyFilterParams
	// envs are the packages asked run.environment, in order.
	envs      []string
	envParams []protocol.RunEnvironmentParams
}

func newEnvPackages(fx *fakeExec, ms ...*protocol.Manifest) *envPackages {
	p := &envPackages{fakeExec: fx, extra: map[string]*protocol.Manifest{},
		layers: map[string]func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error){}}
	for _, m := range ms {
		p.extra[m.Name] = m
	}
	return p
}

// InstalledManifests lists the fake's packages and the test's own.
func (p *envPackages) InstalledManifests() []*protocol.Manifest {
	p.fakePackages.mu.Lock()
	var ms []*protocol.Manifest
	for _, m := range p.fakePackages.manifests {
		ms = append(ms, m)
	}
	p.fakePackages.mu.Unlock()
	p.mu.Lock()
	for _, m := range p.extra {
		ms = append(ms, m)
	}
	p.mu.Unlock()
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms
}

func (p *envPackages) Manifest(pkg string) (*protocol.Manifest, bool) {
	p.mu.Lock()
	m, ok := p.extra[pkg]
	p.mu.Unlock()
	if ok {
		return m, true
	}
	return p.fakeExec.Manifest(pkg)
}

func (p *envPackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	p.mu.Lock()
	_, own := p.extra[pkg]
	p.mu.Unlock()
	if !own {
		return p.fakeExec.Call(ctx, pkg, method, params, result)
	}
	if method != protocol.MethodRunEnvironment {
		return protocol.Errorf(protocol.ErrInvalid, "%s is not a plain call here (an in-transaction method uses CallInTx)", method)
	}
	var in protocol.RunEnvironmentParams
	if err := roundTrip(params, &in); err != nil {
		return err
	}
	p.mu.Lock()
	p.envs = append(p.envs, pkg)
	p.envParams = append(p.envParams, in)
	fn := p.layers[pkg]
	p.mu.Unlock()
	if fn == nil {
		return protocol.Errorf(protocol.ErrMethodNotFound, "%s serves no run.environment", pkg)
	}
	out, err := fn(in)
	if err != nil {
		return err
	}
	return roundTrip(out, result)
}

// CallInTx serves dependency.filter within the in-transaction bound.
func (p *envPackages) CallInTx(ctx context.Context, pkg, method string, params, result any) error {
	if method != protocol.MethodDependencyFilter {
		return protocol.Errorf(protocol.ErrInvalid, "unexpected in-transaction %s", method)
	}
	ctx, cancel := context.WithTimeout(ctx, protocol.InTransactionDeadlineMillis*time.Millisecond)
	defer cancel()
	var in protocol.DependencyFilterParams
	if err := roundTrip(params, &in); err != nil {
		return err
	}
	p.mu.Lock()
	p.filters = append(p.filters, in)
	fn := p.filter
	p.mu.Unlock()
	out, err := fn(ctx, in)
	if err != nil {
		return err
	}
	return roundTrip(out, result)
}

func (p *envPackages) setLayer(pkg string, fn func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.layers[pkg] = fn
}

func (p *envPackages) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.envs)
}

// filterAnswers are how the Wait's owner answers dependency.filter.
var filterAnswers = map[string]func(ctx context.Context) (protocol.DependencyFilterResult, error){
	"match": func(context.Context) (protocol.DependencyFilterResult, error) {
		return protocol.DependencyFilterResult{Match: true}, nil
	},
	"no match": func(context.Context) (protocol.DependencyFilterResult, error) {
		return protocol.DependencyFilterResult{}, nil
	},
	"error": func(context.Context) (protocol.DependencyFilterResult, error) {
		return protocol.DependencyFilterResult{}, errors.New("the filter broke")
	},
	"timeout": func(ctx context.Context) (protocol.DependencyFilterResult, error) {
		<-ctx.Done()
		return protocol.DependencyFilterResult{}, ctx.Err()
	},
}

// TestDependencyFilterDecidesWhetherAJoinedEventWakesTheWait: an Event
// joining a Work whose Wait a filtering package owns is asked about in
// the routing transaction (through CallInTx, with the Wait and the
// Event); only a match wakes it. No match, an error and a timeout leave
// the Work waiting with the Event among its inputs, and a later matching
// Event wakes it. A Wait of a package that declares no filter wakes on
// any joined Event without a call.
func TestDependencyFilterDecidesWhetherAJoinedEventWakesTheWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		owner   string
		first   string
		wakes   bool
		filters int
	}{
		{"match wakes", "gh", "match", true, 1},
		{"no match waits", "gh", "no match", false, 2},
		{"an error counts as no match", "gh", "error", false, 2},
		{"a timeout counts as no match", "gh", "timeout", false, 2},
		{"an owner without a filter is not asked", "plain", "no match", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &protocol.Manifest{Name: "gh"}
			gh.Provides.DependencyFilter = true
			gh.Provides.Operations = []protocol.Operation{{Name: "gh.wait", Kind: protocol.OperationWait}}
			plain := &protocol.Manifest{Name: "plain"}
			plain.Provides.Operations = []protocol.Operation{{Name: "plain.wait", Kind: protocol.OperationWait}}
			var ep *envPackages
			answer := tc.first
			r := newExecRig(t, execOpts{kind: protocol.WorkKind{Standing: true}, wrap: func(fx *fakeExec) Packages {
				ep = newEnvPackages(fx, gh, plain)
				ep.filter = func(ctx context.Context, _ protocol.DependencyFilterParams) (protocol.DependencyFilterResult, error) {
					ep.mu.Lock()
					a := answer
					ep.mu.Unlock()
					return filterAnswers[a](ctx)
				}
				return ep
			}})
			w := r.accept("k")
			p := r.run()
			wt, err := r.e.DeclareWait(context.Background(), r.byToken(p.Toolbelt.Token), tc.owner, protocol.WaitPlan{Description: "checks pass"})
			if err != nil {
				t.Fatal(err)
			}
			r.fx.finish(p.Execution, completed)
			r.workIn(w.ID, pebblekv.WorkWaiting)

			first := r.accept("k")
			firstEv := first.Inputs[len(first.Inputs)-1]
			if first.ID != w.ID {
				t.Fatalf("the Event did not join: %s", first.ID)
			}
			woken := firstEv
			if !tc.wakes {
				if st := r.work(w.ID).State; st != pebblekv.WorkWaiting {
					t.Fatalf("after %s the Work is %s, want waiting", tc.first, st)
				}
				r.noRun(w.ID, 1)
				if !slices.Contains(r.work(w.ID).Inputs, firstEv) {
					t.Fatalf("the Event that did not wake the Wait is not an input: %v", r.work(w.ID).Inputs)
				}
				ep.mu.Lock()
				answer = "match"
				ep.mu.Unlock()
				second := r.accept("k")
				woken = second.Inputs[len(second.Inputs)-1]
			}
			next := r.run()
			if next.Work.ID != w.ID || next.Attempt != 2 || next.Woke == nil || next.Woke.Reason != protocol.WakeEvent ||
				next.Woke.Wait != wt.ID || next.Woke.Event == nil || next.Woke.Event.ID != woken {
				t.Fatalf("second attempt woke %+v, want by %s", next.Woke, woken)
			}
			ep.mu.Lock()
			filters := slices.Clone(ep.filters)
			ep.mu.Unlock()
			if len(filters) != tc.filters {
				t.Fatalf("dependency.filter asked %d times, want %d", len(filters), tc.filters)
			}
			if len(filters) > 0 {
				f := filters[0]
				if f.Wait != (protocol.DependencyWait{ID: wt.ID, Work: w.ID, Owner: "gh", Description: "checks pass"}) || f.Event.ID != firstEv {
					t.Errorf("dependency.filter params %+v", f)
				}
			}
			r.fx.finish(next.Execution, completed)
			r.workIn(w.ID, pebblekv.WorkCompleted)
		})
	}
}

// envRig is an execRig whose scope s uses packages aaa (its binding
// grants aaa.op) and vault (its binding names vault's connection bot),
// both declaring run_environment, and not zzz, which declares it too.
func envRig(t *testing.T, decl protocol.Executor) (*execRig, *envPackages) {
	t.Helper()
	aaa := &protocol.Manifest{Name: "aaa"}
	aaa.Provides.RunEnvironment = true
	aaa.Provides.Operations = []protocol.Operation{{Name: "aaa.op", Kind: protocol.OperationHandler}}
	vault := &protocol.Manifest{Name: "vault"}
	vault.Provides.RunEnvironment = true
	vault.Provides.Connections = []protocol.ConnectionType{{Type: "vault.token"}}
	zzz := &protocol.Manifest{Name: "zzz"}
	zzz.Provides.RunEnvironment = true
	var ep *envPackages
	r := newExecRig(t, execOpts{decl: decl,
		cfg: func(c *config.Config) {
			c.Connections = []config.Connection{{Name: "bot", Type: "vault.token"}}
			b := &c.Scopes[0].Bindings[0]
			b.Connection, b.Operations = "bot", []string{"aaa.op"}
			c.Scopes[0].Connections = []string{"bot"}
		},
		wrap: func(fx *fakeExec) Packages {
			ep = newEnvPackages(fx, aaa, vault, zzz)
			return ep
		}})
	return r, ep
}

func layer(env map[string]string) func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error) {
	return func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error) {
		return protocol.RunEnvironmentResult{Env: env}, nil
	}
}

// TestRunEnvironmentLayersMergeIntoTheRunsEnv: before executor.run each
// package declaring run_environment that the scope uses is asked, by
// name, with the scope, the Work, the execution, the binding and its
// connection; the layers merge over the binding's pass_env values, a
// later layer's name winning, beside the host's own variables. A package
// the scope does not use is not asked.
func TestRunEnvironmentLayersMergeIntoTheRunsEnv(t *testing.T) {
	r, ep := envRig(t, protocol.Executor{})
	ep.setLayer("aaa", layer(map[string]string{"SHARED": "from aaa", "A_ONLY": "1", "GRANTED": "from aaa"}))
	ep.setLayer("vault", layer(map[string]string{"SHARED": "from vault", "VAULT_TOKEN": "s3cret"}))
	ep.setLayer("zzz", layer(map[string]string{"ZZZ": "never"}))
	w := r.accept("k")
	p := r.run()
	if got := ep.asked(); !slices.Equal(got, []string{"aaa", "vault"}) {
		t.Fatalf("run.environment asked %v, want [aaa vault]", got)
	}
	for _, in := range ep.envParams {
		if in.Scope != "s" || in.Work.ID != w.ID || in.Execution != p.Execution || in.Attempt != 1 || in.Binding != "b" || in.Connection != "bot" {
			t.Errorf("run.environment params %+v", in)
		}
	}
	want := map[string]string{
		"SHARED": "from vault", "A_ONLY": "1", "VAULT_TOKEN": "s3cret", "GRANTED": "from aaa",
		protocol.EnvToken: p.Toolbelt.Token, protocol.EnvWork: w.ID, protocol.EnvExecution: p.Execution,
		protocol.EnvToolbelt: "/state/toolbelt.sock", protocol.EnvBinary: "/usr/bin/open-conduit",
	}
	if len(p.Env) != len(want) {
		t.Errorf("env has %d names, want %d: %v", len(p.Env), len(want), keys(p.Env))
	}
	for k, v := range want {
		if p.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, p.Env[k], v)
		}
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRunEnvironmentRefusalFailsTheAttemptBeforeRun: a layer that errs,
// or sets a variable the host sets itself or a name no environment
// holds, fails the attempt before any executor.run, saying why (never
// with a value); the retry policy applies, and once the layer answers
// well the next attempt runs.
func TestRunEnvironmentRefusalFailsTheAttemptBeforeRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error)
		why   string
	}{
		{"an error", func(protocol.RunEnvironmentParams) (protocol.RunEnvironmentResult, error) {
			return protocol.RunEnvironmentResult{}, protocol.Errorf(protocol.ErrUnavailable, "the vault is sealed")
		}, "the vault is sealed"},
		{"a host variable", layer(map[string]string{protocol.EnvToken: "forged"}), protocol.EnvToken},
		{"a bad name", layer(map[string]string{"A=B": "hidden-value"}), "A=B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ep := envRig(t, protocol.Executor{})
			ep.setLayer("aaa", layer(map[string]string{"A_ONLY": "1"}))
			ep.setLayer("vault", tc.layer)
			w := r.accept("k")
			hist := r.history(w.ID)
			r.until("the first attempt settled", func(rd *pebblekv.Reader) (bool, error) {
				var err error
				hist, err = rd.ExecutionsOf(w.ID)
				return len(hist) == 1 && hist[0].State == pebblekv.ExecSettled, err
			})
			x := hist[0]
			if x.Outcome != protocol.OutcomeFailed || !strings.Contains(x.Reason, tc.why) || strings.Contains(x.Reason, "forged") ||
				strings.Contains(x.Reason, "hidden-value") {
				t.Errorf("attempt settled %s: %q", x.Outcome, x.Reason)
			}
			if n := r.fx.called(protocol.MethodExecutorRun); n != 0 {
				t.Fatalf("executor.run called %d times after a refused layer", n)
			}
			if st := r.workIn(w.ID, pebblekv.WorkPending); !strings.Contains(st.Reason, "retrying") {
				t.Errorf("Work reason %q", st.Reason)
			}
			ep.setLayer("vault", layer(map[string]string{"VAULT_TOKEN": "ok"}))
			r.advance(retryBase)
			p := r.run()
			if p.Attempt != 2 || p.Env["VAULT_TOKEN"] != "ok" || p.Env["A_ONLY"] != "1" {
				t.Fatalf("retry attempt %d env %v", p.Attempt, keys(p.Env))
			}
			r.fx.finish(p.Execution, completed)
			r.workIn(w.ID, pebblekv.WorkCompleted)
		})
	}
}

// TestForgetFollowsTheSettleOnlyWhenDeclared: an executor declaring the
// forget control is sent executor.forget for each execution once it is
// settled in the store (whatever its outcome); one that does not declare
// it never is.
func TestForgetFollowsTheSettleOnlyWhenDeclared(t *testing.T) {
	for _, tc := range []struct {
		name     string
		controls []string
		forgets  int
	}{
		{"declared", []string{protocol.ControlForget}, 2},
		{"not declared", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExecRig(t, execOpts{decl: protocol.Executor{Controls: tc.controls}})
			w := r.accept("k")
			p := r.run()
			r.fx.finish(p.Execution, failed)
			r.workIn(w.ID, pebblekv.WorkPending)
			r.advance(retryBase)
			p2 := r.run()
			r.fx.finish(p2.Execution, completed)
			r.workIn(w.ID, pebblekv.WorkCompleted)
			var got []string
			for range tc.forgets {
				select {
				case f := <-r.fx.forgets:
					if f.Epoch != 1 || f.Executor != execName {
						t.Errorf("forget params %+v", f)
					}
					got = append(got, f.Execution)
				case <-time.After(waitFor):
					t.Fatalf("waited %s for executor.forget; calls %v", waitFor, r.fx.callLog())
				}
			}
			r.stop()
			if n := r.fx.called(protocol.MethodExecutorForget); n != tc.forgets {
				t.Fatalf("executor.forget called %d times, want %d", n, tc.forgets)
			}
			slices.Sort(got)
			want := []string{p.Execution, p2.Execution}
			slices.Sort(want)
			if tc.forgets > 0 && !slices.Equal(got, want) {
				t.Errorf("forgot %v, want %v", got, want)
			}
			if r.fx.unsettled != 0 {
				t.Errorf("executor.forget came before its execution settled")
			}
		})
	}
}
