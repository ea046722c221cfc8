package engine

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// EmitRequest is an emit operation's toolbelt call, as the engine accepts
// the Event its package planned.
type EmitRequest struct {
	// Package declares the operation.
	Package string
	// Call is the call operation.emit was given; emit.commit is given it
	// too.
	Call protocol.OperationCallParams
	// Draft is the Event operation.emit answered.
	Draft protocol.EmitDraft
	// Commit asks the package for records (emit.commit) inside the
	// emission's transaction: the operation declares commit.
	Commit bool
	// Within, when set, runs last inside the emission's transaction with
	// the accepted Event, so what it writes (the call's replay record)
	// commits with the Event or not at all.
	Within func(tx *pebblekv.Tx, ev pebblekv.Event, added bool) error
}

// EmitOperation accepts the Event an emit operation's call planned for
// execution x, in one transaction: the Event goes into x's scope, derived
// from the trigger Event of x's Work (so that chain's causal bounds apply:
// over them is protocol.ErrCausalLimit), from the package's source
// (Draft.Source, default its name), named by Draft.DeliveryID or else by
// the Work and the call's request ID. When the Event is new and r.Commit
// is set, the package's emit.commit is called inside the transaction
// (bounded at 250 ms, no callbacks) and the records it answers (KV writes
// in its own namespaces) commit with the Event; an error, a timeout or a
// refused record aborts everything, and nothing is accepted. An Event
// already accepted under that identity is answered with added false and
// nothing else is written but Within's. A draft the package's manifest does
// not allow (an undeclared family, a foreign source, a stale schema, over
// the bounds) is protocol.ErrInternal naming why: the caller cannot fix
// it. x must still run under the token it was resolved by.
func (e *Engine) EmitOperation(ctx context.Context, x pebblekv.Execution, r EmitRequest) (ev pebblekv.Event, added bool, err error) {
	m, ok := e.d.Packages.Manifest(r.Package)
	if !ok {
		return pebblekv.Event{}, false, protocol.Errorf(protocol.ErrUnavailable, "%s is not running; retry with the same request ID", r.Package)
	}
	em := protocol.Emission{
		Scope: x.Scope, Source: r.Draft.Source, DeliveryID: r.Draft.DeliveryID,
		Type: r.Draft.Type, Payload: r.Draft.Payload,
	}
	if em.Source == "" {
		em.Source = r.Package
	}
	if em.DeliveryID == "" {
		em.DeliveryID = emitDeliveryID(x.Work, r.Call.RequestID)
	}
	rules := protocol.HostKVRules(m, func(scope string) bool { return scope == x.Scope })
	if err := rules.CheckEmission(em); err != nil {
		return pebblekv.Event{}, false, protocol.Errorf(protocol.ErrInternal,
			"%s planned an Event for %s the host cannot accept: %v", r.Package, r.Call.Operation, err)
	}
	err = e.d.DB.Update(func(tx *pebblekv.Tx) error {
		cur, found, err := tx.Execution(x.ID)
		if err != nil {
			return err
		}
		if err := live(cur, found, x); err != nil {
			return err
		}
		w, found, err := tx.Work(x.Work)
		if err != nil {
			return err
		}
		var parent string
		if found {
			parent = w.Trigger
		}
		ev, added, err = tx.Accept(pebblekv.EventInput{
			Scope: em.Scope, Source: em.Source, Type: em.Type, DeliveryID: em.DeliveryID,
			Parent: parent, Payload: em.Payload, Time: e.d.Clock.Now(),
		}, e.d.Limits)
		if err != nil {
			return err
		}
		if added && r.Commit {
			if err := e.emitCommit(ctx, tx, rules, r, ev); err != nil {
				return err
			}
		}
		if r.Within != nil {
			return r.Within(tx, ev, added)
		}
		return nil
	})
	if err != nil {
		return pebblekv.Event{}, false, err
	}
	if added {
		e.Notify()
	}
	return ev, added, nil
}

// emitCommit asks the package for the records of its accepted Event and
// applies them in tx, under the package's KV rules.
func (e *Engine) emitCommit(ctx context.Context, tx *pebblekv.Tx, rules protocol.KVRules, r EmitRequest, ev pebblekv.Event) error {
	var res protocol.EmitCommitResult
	err := e.callInTx(ctx, r.Package, protocol.MethodEmitCommit, protocol.EmitCommitParams{
		Operation: r.Call.Operation, Input: r.Call.Input, Authority: r.Call.Authority,
		RequestID: r.Call.RequestID, Event: ev.Wire(),
	}, &res)
	if err != nil {
		return fmt.Errorf("%s of %s aborted the emission, so nothing was accepted: %w", protocol.MethodEmitCommit, r.Package, err)
	}
	if res.Records == nil {
		return nil
	}
	if len(res.Records.Emissions) > 0 {
		return protocol.Errorf(protocol.ErrInternal,
			"%s of %s answered emissions; its records carry KV checks and writes only, so nothing was accepted", protocol.MethodEmitCommit, r.Package)
	}
	if _, err := tx.CommitBatch(rules, *res.Records, e.d.Limits); err != nil {
		return fmt.Errorf("%s of %s answered records the host refused, so nothing was accepted: %w", protocol.MethodEmitCommit, r.Package, err)
	}
	return nil
}

// emitDeliveryID names an emitted Event the package did not name: by the
// Work and the call's request ID, so the same call is the same Event, or
// afresh for a call without one.
func emitDeliveryID(work, requestID string) string {
	if requestID == "" {
		requestID = rand.Text()
	}
	return "op/" + work + "/" + requestID
}
