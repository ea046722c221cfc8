package engine

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// emitRig is an execRig with a running execution of Work w and a package
// "notes" declaring family notes.built and the emit operation notes.built.
type emitRig struct {
	*execRig
	w pebblekv.Work
	x pebblekv.Execution
}

func newEmitRig(t *testing.T) *emitRig {
	t.Helper()
	r := newExecRig(t, execOpts{})
	r.pkgs.mu.Lock()
	m := &protocol.Manifest{Name: "notes"}
	m.Provides.Families = []protocol.Family{{Name: "notes.built"}}
	m.Provides.Operations = []protocol.Operation{{Name: "notes.built", Kind: protocol.OperationEmit, Commit: true}}
	r.pkgs.manifests["notes"] = m
	r.pkgs.mu.Unlock()
	w := r.accept("k1")
	p := r.run()
	return &emitRig{execRig: r, w: w, x: r.byToken(p.Toolbelt.Token)}
}

func (r *emitRig) setCommit(fn func(ctx context.Context, p protocol.EmitCommitParams) (protocol.EmitCommitResult, error)) {
	r.pkgs.mu.Lock()
	defer r.pkgs.mu.Unlock()
	r.pkgs.commit = fn
}

// emit is notes.built's call with request ID rq, planning draft.
func (r *emitRig) emit(rq string, draft protocol.EmitDraft, commit bool, within func(tx *pebblekv.Tx, ev pebblekv.Event, added bool) error) (pebblekv.Event, bool, error) {
	return r.e.EmitOperation(context.Background(), r.x, EmitRequest{
		Package: "notes", Draft: draft, Commit: commit, Within: within,
		Call: protocol.OperationCallParams{Operation: "notes.built", Input: protocol.Payload{Data: jsontext.Value(`{}`)},
			Authority: protocol.Authority{Scope: r.x.Scope, Work: r.x.Work, Execution: r.x.ID}, RequestID: rq},
	})
}

// state is the log's latest sequence and notes/last's value.
func (r *emitRig) state() (uint64, string) {
	r.t.Helper()
	var seq uint64
	var last []byte
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		if seq, err = rd.LatestSequence(); err != nil {
			return err
		}
		last, _, _, err = rd.KVGet("notes", "last")
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return seq, string(last)
}

var built = protocol.EmitDraft{Type: "notes.built", Payload: protocol.Payload{Data: jsontext.Value(`{"ok":true}`)}}

// TestEmitCommitsItsRecordsWithTheEventDerivedFromTheWork: the Event goes
// into the Work's scope, derived from its trigger; emit.commit sees it as
// accepted (ID, sequence, root, depth) and its records and the toolbelt's
// Within commit with it; the same call again is the same Event, with no
// second emit.commit.
func TestEmitCommitsItsRecordsWithTheEventDerivedFromTheWork(t *testing.T) {
	r := newEmitRig(t)
	before, _ := r.state()
	var seen protocol.EmitCommitParams
	r.setCommit(func(_ context.Context, p protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
		seen = p
		return protocol.EmitCommitResult{Records: &protocol.KVCommitParams{
			Checks: []protocol.KVCheck{{Namespace: "notes", Key: "last", Absent: true}},
			Puts:   []protocol.KVPut{{Namespace: "notes", Key: "last", Value: []byte(p.Event.ID)}},
		}}, nil
	})
	var withinSaw string
	ev, added, err := r.emit("rq1", built, true, func(tx *pebblekv.Tx, ev pebblekv.Event, added bool) error {
		withinSaw = ev.ID
		return nil
	})
	if err != nil || !added {
		t.Fatalf("emit: added %v, %v", added, err)
	}
	if ev.Scope != "s" || ev.Source != "notes" || ev.Parent != r.w.Trigger || ev.Root != r.w.Trigger || ev.Depth != 1 || ev.Seq != before+1 {
		t.Fatalf("Event %+v; want scope s, source notes, derived from the Work's trigger %s, sequence %d", ev, r.w.Trigger, before+1)
	}
	if seen.Event.ID != ev.ID || seen.Event.Sequence != ev.Seq || seen.Event.Depth != 1 || seen.Operation != "notes.built" || seen.RequestID != "rq1" || seen.Authority.Work != r.w.ID {
		t.Fatalf("emit.commit got %+v", seen)
	}
	if seq, last := r.state(); seq != before+1 || last != ev.ID || withinSaw != ev.ID {
		t.Fatalf("after the emission: sequence %d, notes/last %q, Within saw %q; want %d, %q, %q", seq, last, withinSaw, before+1, ev.ID, ev.ID)
	}
	// The same call again: the same Event, not new, and its records are
	// not asked for again (their absent check would refuse them).
	again, added, err := r.emit("rq1", built, true, nil)
	if err != nil || added || again.ID != ev.ID {
		t.Fatalf("again: %+v added %v, %v; want the same Event, not added", again, added, err)
	}
	if n := r.pkgs.called(protocol.MethodEmitCommit); n != 1 {
		t.Fatalf("emit.commit called %d times, want 1", n)
	}
}

// TestEmitFailureAcceptsNothing: whatever fails in the emission's
// transaction (emit.commit's error or timeout, records the host refuses,
// Within) or before it (a draft the manifest does not allow, a settled
// execution) leaves the log and the KV as they were.
func TestEmitFailureAcceptsNothing(t *testing.T) {
	refused := protocol.Errorf(protocol.ErrConflict, "notes/last changed")
	records := func(k protocol.KVCommitParams) func(context.Context, protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
		return func(context.Context, protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
			return protocol.EmitCommitResult{Records: &k}, nil
		}
	}
	put := []protocol.KVPut{{Namespace: "notes", Key: "last", Value: []byte("x")}}
	for _, tc := range []struct {
		name   string
		draft  protocol.EmitDraft
		commit func(context.Context, protocol.EmitCommitParams) (protocol.EmitCommitResult, error)
		within func(*pebblekv.Tx, pebblekv.Event, bool) error
		code   *protocol.Error
	}{
		{name: "emit.commit fails", draft: built, code: protocol.ErrConflict,
			commit: func(context.Context, protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
				return protocol.EmitCommitResult{}, refused
			}},
		{name: "emit.commit times out", draft: built, code: &protocol.Error{},
			commit: func(ctx context.Context, _ protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
				<-ctx.Done()
				return protocol.EmitCommitResult{}, ctx.Err()
			}},
		{name: "records in a foreign namespace", draft: built, code: protocol.ErrUnauthorized,
			commit: records(protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "other", Key: "k", Value: []byte("x")}}})},
		{name: "records carry an emission", draft: built, code: protocol.ErrInternal,
			commit: records(protocol.KVCommitParams{Puts: put, Emissions: []protocol.Emission{{Scope: "s", Source: "notes", DeliveryID: "d", Type: "notes.built"}}})},
		{name: "records' check fails", draft: built, code: protocol.ErrConflict,
			commit: records(protocol.KVCommitParams{Checks: []protocol.KVCheck{{Namespace: "notes", Key: "last", Version: "v0"}}, Puts: put})},
		{name: "Within fails", draft: built, code: protocol.ErrConflict,
			commit: records(protocol.KVCommitParams{Puts: put}),
			within: func(*pebblekv.Tx, pebblekv.Event, bool) error { return refused }},
		{name: "an undeclared family", draft: protocol.EmitDraft{Type: "notes.other"}, code: protocol.ErrInternal,
			commit: records(protocol.KVCommitParams{Puts: put})},
		{name: "a foreign source", draft: protocol.EmitDraft{Type: "notes.built", Source: "gh"}, code: protocol.ErrInternal,
			commit: records(protocol.KVCommitParams{Puts: put})},
		{name: "a foreign schema", draft: protocol.EmitDraft{Type: "notes.built", Payload: protocol.Payload{Schema: "gh.x.v1"}}, code: protocol.ErrInternal,
			commit: records(protocol.KVCommitParams{Puts: put})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEmitRig(t)
			before, _ := r.state()
			r.setCommit(tc.commit)
			_, _, err := r.emit("rq-fail", tc.draft, true, tc.within)
			if err == nil || protocol.CodeOf(err) != tc.code.Code {
				t.Fatalf("emit: %v (code %q), want code %q", err, protocol.CodeOf(err), tc.code.Code)
			}
			if seq, last := r.state(); seq != before || last != "" {
				t.Fatalf("a failed emission left sequence %d (was %d) and notes/last %q", seq, before, last)
			}
			// Control: the same call with a commit that writes nothing,
			// and a draft the manifest allows, is accepted.
			r.setCommit(records(protocol.KVCommitParams{}))
			if _, added, err := r.emit("rq-fail", built, true, nil); err != nil || !added {
				t.Fatalf("the control emission: added %v, %v", added, err)
			}
		})
	}
	t.Run("a settled execution", func(t *testing.T) {
		r := newEmitRig(t)
		r.setCommit(records(protocol.KVCommitParams{Puts: put}))
		r.fx.finish(r.x.ID, completed)
		r.settled(r.x.ID)
		before, _ := r.state()
		_, _, err := r.emit("rq-late", built, true, nil)
		wantCode(t, "emit by a settled execution", err, protocol.ErrUnauthorized)
		if seq, last := r.state(); seq != before || last != "" {
			t.Fatalf("a refused emission left sequence %d (was %d) and notes/last %q", seq, before, last)
		}
	})
}

// TestEmitWithoutCommitNeverCallsEmitCommit: an operation that does not
// declare commit is accepted without asking for records.
func TestEmitWithoutCommitNeverCallsEmitCommit(t *testing.T) {
	r := newEmitRig(t)
	r.setCommit(func(context.Context, protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
		return protocol.EmitCommitResult{}, protocol.Errorf(protocol.ErrConflict, "never asked")
	})
	if _, added, err := r.emit("", built, false, nil); err != nil || !added {
		t.Fatalf("emit without commit: added %v, %v", added, err)
	}
	// Without a request ID each call is a new Event.
	if _, added, err := r.emit("", built, false, nil); err != nil || !added {
		t.Fatalf("second emit without a request ID: added %v, %v", added, err)
	}
	if n := r.pkgs.called(protocol.MethodEmitCommit); n != 0 {
		t.Fatalf("emit.commit called %d times, want 0", n)
	}
}
