package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// triggerPackages answers as fakePackages does and takes the in-transaction
// calls, answering work_kind.trigger with answer, which sees the call's
// context.
type triggerPackages struct {
	*fakePackages
	mu     sync.Mutex
	answer func(ctx context.Context, p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error)
	asked  []protocol.WorkKindTriggerParams
}

func (tp *triggerPackages) CallInTx(ctx context.Context, pkg, method string, params, result any) error {
	p, ok := params.(protocol.WorkKindTriggerParams)
	if !ok || method != protocol.MethodWorkKindTrigger {
		return tp.fakePackages.Call(ctx, pkg, method, params, result)
	}
	tp.mu.Lock()
	tp.asked = append(tp.asked, p)
	answer := tp.answer
	tp.mu.Unlock()
	res, err := answer(ctx, p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	*result.(*protocol.WorkKindTriggerResult) = res
	return nil
}

// take is what was asked since the last take.
func (tp *triggerPackages) take() []protocol.WorkKindTriggerParams {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := tp.asked
	tp.asked = nil
	return out
}

// TestTriggerIsAskedInsideTheCreatingTransaction: work_kind.trigger is
// asked once for a Work being created, in the transaction that finds no
// open Work by key and creates it (nothing can take the key meanwhile),
// and never for a join; an error, a timeout or an answer naming no input
// makes the first input the trigger.
func TestTriggerIsAskedInsideTheCreatingTransaction(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("sched", []protocol.Route{{Handler: "sched.jobs"}}, protocol.WorkKind{Kind: "job", Trigger: true})
	pkgs.setMatch("sched.jobs", keyed("sched.fired", "job"))
	tp := &triggerPackages{fakePackages: pkgs}
	r := newRigOn(t, pkgs, tp, false, config.Scope{ID: "s", Routes: []config.Route{{Handler: "sched.jobs"}}})

	// planted is the result of writing an open Work for key j1 from inside
	// the trigger call.
	planted := make(chan error, 1)
	plant := func(ctx context.Context, p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
		done := make(chan error, 1)
		go func() {
			done <- r.db.Update(func(tx *pebblekv.Tx) error {
				return tx.PutWork(pebblekv.Work{ID: pebblekv.NewWorkID(), Scope: "s", Kind: "job", Keys: []string{"j1"}, State: pebblekv.WorkPending})
			})
		}()
		select {
		case err := <-done:
			planted <- err
		case <-ctx.Done():
			go func() { planted <- <-done }()
		}
		return protocol.WorkKindTriggerResult{Trigger: p.Inputs[0].ID}, nil
	}
	cases := []struct {
		name   string
		key    string
		answer func(ctx context.Context, p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error)
		create bool
		asked  int
	}{
		{name: "a new Work asks it once, inside its creating transaction", key: "j1", answer: plant, create: true, asked: 1},
		{name: "a join asks nothing", key: "j1", answer: func(context.Context, protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
			return protocol.WorkKindTriggerResult{}, errors.New("asked for a join")
		}, asked: 0},
		{name: "an answer naming its input is kept", key: "j2", answer: func(_ context.Context, p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
			return protocol.WorkKindTriggerResult{Trigger: p.Inputs[0].ID}, nil
		}, create: true, asked: 1},
		{name: "an answer naming no input falls back", key: "j3", answer: func(context.Context, protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
			return protocol.WorkKindTriggerResult{Trigger: "ev_nope"}, nil
		}, create: true, asked: 1},
		{name: "an error falls back", key: "j4", answer: func(context.Context, protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
			return protocol.WorkKindTriggerResult{}, errBroken
		}, create: true, asked: 1},
		{name: "a timeout falls back", key: "j5", answer: func(ctx context.Context, _ protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
			<-ctx.Done()
			return protocol.WorkKindTriggerResult{}, ctx.Err()
		}, create: true, asked: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp.mu.Lock()
			tp.answer = c.answer
			tp.mu.Unlock()
			ev := r.accept("s", "sched.fired", map[string]string{"key": c.key})
			d, w := r.routed(ev)
			asked := tp.take()
			if len(asked) != c.asked || d.Created != c.create {
				t.Fatalf("asked %d times (want %d), decision %+v", len(asked), c.asked, d)
			}
			if c.create && (w.Trigger != ev.ID || asked[0].Work.ID != w.ID || len(asked[0].Inputs) != 1 || asked[0].Inputs[0].ID != ev.ID) {
				t.Errorf("asked %+v, Work %+v", asked[0], w)
			}
		})
	}
	// The Work written from inside the trigger call waited for the
	// routing transaction, which had taken key j1 by then.
	if err := <-planted; !errors.Is(err, protocol.ErrConflict) {
		t.Errorf("writing a Work for the key during the trigger call: %v, want a conflict", err)
	}
}
