package toolbelt

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// emission is the fake engine's Emitter: it accepts the planned Event into
// the rig's real store, as the engine does (emit.commit stood in for by
// commitErr), and runs the toolbelt's Within in the same transaction.
type emission struct {
	db *pebblekv.DB
	// commitErr, when set, fails the emission of an operation that
	// commits, after the Event was accepted in the transaction.
	commitErr error
	requests  []engine.EmitRequest
}

func (e *fakeEngine) EmitOperation(_ context.Context, x pebblekv.Execution, r engine.EmitRequest) (ev pebblekv.Event, added bool, err error) {
	e.mu.Lock()
	e.requests = append(e.requests, r)
	commitErr := e.commitErr
	e.mu.Unlock()
	err = e.db.Update(func(tx *pebblekv.Tx) error {
		ev, added, err = tx.Accept(pebblekv.EventInput{Scope: x.Scope, Source: r.Package, Type: r.Draft.Type,
			DeliveryID: "op/" + x.Work + "/" + r.Call.RequestID, Payload: r.Draft.Payload}, pebblekv.Limits{})
		if err != nil {
			return err
		}
		if added && r.Commit && commitErr != nil {
			return commitErr
		}
		if r.Within != nil {
			return r.Within(tx, ev, added)
		}
		return nil
	})
	return ev, added, err
}

func (e *fakeEngine) setCommitErr(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.commitErr = err
}

func (e *fakeEngine) emitRequests() []engine.EmitRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.EmitRequest(nil), e.requests...)
}

func (p *fakePackages) setDraft(d protocol.EmitDraft) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draft = d
}

// latest is the store's latest Event sequence: how many were accepted.
func (r *rig) latest() uint64 {
	r.t.Helper()
	var seq uint64
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		seq, err = rd.LatestSequence()
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return seq
}

var noteDraft = protocol.EmitDraft{Type: "gh.note", Payload: protocol.Payload{Schema: "gh.note.v1", Data: jsontext.Value(`{"text":"built"}`)}}

func TestEmitAcceptsTheEventOnceAndARetryReplaysIt(t *testing.T) {
	r := newRig(t)
	r.pkgs.setDraft(noteDraft)
	first, err := r.call(tokenA, "gh.emit", `{"text":"built"}`, "rq-e1")
	if err != nil {
		t.Fatal(err)
	}
	var got EmitAnswer
	decode(t, first.Output, &got)
	if got.EventID == "" || got.Sequence != 1 || got.Type != "gh.note" || !got.Added || first.Replayed {
		t.Fatalf("first call answered %s (replayed %v); want the new Event 1 of type gh.note", first.Output, first.Replayed)
	}
	// The retry, from the Work's next execution, is the same answer, and
	// nothing is asked or accepted again.
	again, err := r.call(tokenA2, "gh.emit", `{"text":"built"}`, "rq-e1")
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || string(again.Output) != string(first.Output) {
		t.Fatalf("retry answered %s (replayed %v); want %s replayed", again.Output, again.Replayed, first.Output)
	}
	if n := len(r.pkgs.callsOf(protocol.MethodOperationEmit)); n != 1 || r.latest() != 1 {
		t.Fatalf("after the retry: %d operation.emit calls, %d Events; want 1 and 1", n, r.latest())
	}
	// operation.emit got the call as operation.call would, with the host's
	// authority; the engine got the package's draft, not committing.
	c := r.pkgs.callsOf(protocol.MethodOperationEmit)[0]
	want := protocol.Authority{Scope: "s", Work: execA.Work, Execution: execA.ID, Connection: "bot", Caller: "execution:" + execA.ID}
	if c.pkg != "gh" || c.params.Authority != want || c.params.RequestID != "rq-e1" || string(c.params.Input.Data) != `{"text":"built"}` {
		t.Fatalf("operation.emit got %+v", c)
	}
	if reqs := r.eng.emitRequests(); len(reqs) != 1 || reqs[0].Package != "gh" || reqs[0].Draft.Type != "gh.note" || reqs[0].Commit {
		t.Fatalf("the engine was asked %+v; want one gh.note emission without commit", reqs)
	}
	// Negative controls: another Work's same request ID, and a call without
	// one, are new emissions.
	other, err := r.call(tokenB, "gh.emit", `{}`, "rq-e1")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, other.Output, &got)
	if other.Replayed || got.Sequence != 2 || !got.Added {
		t.Fatalf("another Work's call answered %s (replayed %v); want a new Event 2", other.Output, other.Replayed)
	}
	// The same request ID for another operation of the package conflicts.
	if _, err := r.call(tokenA, "gh.wait", `{}`, "rq-e1"); codeOf(err) != protocol.CodeConflict {
		t.Fatalf("gh.wait with gh.emit's request ID: %v; want conflict", err)
	}
}

func TestEmitCommitFailureAcceptsNothingAndTheRetryEmits(t *testing.T) {
	r := newRig(t)
	r.pkgs.declare("gh", protocol.Operation{Name: "gh.emit", Kind: protocol.OperationEmit, Commit: true})
	r.pkgs.setDraft(noteDraft)
	r.eng.setCommitErr(protocol.Errorf(protocol.ErrConflict, "emit.commit of gh: gh/last changed"))
	if _, err := r.call(tokenA, "gh.emit", `{}`, "rq-c1"); codeOf(err) != protocol.CodeConflict {
		t.Fatalf("a failing emit.commit: %v; want its conflict", err)
	}
	if n := r.latest(); n != 0 {
		t.Fatalf("a failed emission left %d Events; want none", n)
	}
	if reqs := r.eng.emitRequests(); len(reqs) != 1 || !reqs[0].Commit {
		t.Fatalf("the engine was asked %+v; want one emission with commit", reqs)
	}
	// Nothing was recorded for replay: the retry emits.
	r.eng.setCommitErr(nil)
	ans, err := r.call(tokenA, "gh.emit", `{}`, "rq-c1")
	if err != nil {
		t.Fatal(err)
	}
	var got EmitAnswer
	decode(t, ans.Output, &got)
	if ans.Replayed || !got.Added || got.Sequence != 1 || r.latest() != 1 {
		t.Fatalf("the retry answered %s (replayed %v) with %d Events; want the first Event, emitted now", ans.Output, ans.Replayed, r.latest())
	}
}

func TestEmitUnsupportedWithoutAnEmitterOrWhenThePackageDoesNotServeIt(t *testing.T) {
	r := newRig(t)
	// The package declares gh.emit but answers method_not_found.
	if _, err := r.call(tokenA, "gh.emit", `{}`, "rq-u1"); codeOf(err) != protocol.CodeUnsupported {
		t.Fatalf("a package not serving operation.emit: %v; want unsupported", err)
	}
	// An engine that cannot emit: nothing is asked of the package.
	r.pkgs.setDraft(noteDraft)
	before := len(r.pkgs.callsOf(protocol.MethodOperationEmit))
	s := New(Deps{Engine: struct{ Engine }{r.eng}, Packages: r.pkgs, DB: r.db,
		Grant: func(string, string) (Grant, bool) {
			return Grant{Operations: []string{"gh.emit"}, Toolbelt: "cli"}, true
		}})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.call(ctx, execA, client.ToolbeltRequest{Operation: "gh.emit", Input: jsontext.Value(`{}`), RequestID: "rq-u2"}); protocol.CodeOf(err) != protocol.CodeUnsupported {
		t.Fatalf("an engine without EmitOperation: %v; want unsupported", err)
	}
	if n := len(r.pkgs.callsOf(protocol.MethodOperationEmit)); n != before || r.latest() != 0 {
		t.Fatalf("%d operation.emit calls, %d Events; want none", n-before, r.latest())
	}
	// Control: the rig's engine emits it.
	if _, err := r.call(tokenA, "gh.emit", `{}`, "rq-u3"); err != nil || r.latest() != 1 {
		t.Fatalf("with an emitter: %v, %d Events; want one", err, r.latest())
	}
}
