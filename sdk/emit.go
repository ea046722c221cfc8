package sdk

import (
	"context"
	"fmt"
	"reflect"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// EmitDraft is the Event an emit operation plans: its type (one of the
// extension's families), payload, and optionally its source (the
// extension's name or <name>/<suffix>) and delivery ID. The host accepts it
// into the calling Work's scope, derived from the Work's trigger Event;
// without a delivery ID it names the Event by the Work and the call's
// request ID, so a retried call is the same Event.
type EmitDraft = protocol.EmitDraft

// Emit makes an emit operation from a typed function: register it with
// Extension.Operation, which declares it kind emit. A program a Work runs
// calls it through the toolbelt; the host sends operation.emit, whose
// input is checked and decoded as Handler's is, and fn answers the Event
// to emit. The host accepts it in one transaction (with the records of
// Commit, when given) and answers the caller the Event's ID and sequence.
// fn runs outside any transaction and may call the host; like a handler it
// should be idempotent on r.RequestID.
func Emit[In any](fn func(ctx context.Context, r *Request, in In) (EmitDraft, error)) OperationHandler {
	t := reflect.TypeFor[In]()
	raw := t == payType
	if !raw && t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk: Emit: input %s must be a struct or sdk.Payload", t))
	}
	schema := &Schema{Type: "object"}
	if !raw {
		schema = SchemaOf[In]()
	}
	op := &operation{inputSchema: schema, inputSchemaJSON: schema.JSON(), kind: protocol.OperationEmit}
	dec := newInputDecoder(schema, t)
	op.emit = func(ctx context.Context, r *Request, input protocol.Payload) (EmitDraft, error) {
		var in In
		if raw {
			reflect.ValueOf(&in).Elem().Set(reflect.ValueOf(input))
		} else if err := decodeInput(dec, input.Data, &in); err != nil {
			return EmitDraft{}, err
		}
		return fn(ctx, r, in)
	}
	return OperationHandler{op: op}
}

// CommitFunc answers emit.commit for an emit operation: the records that
// commit with the Event the host accepted for the call r describes (ev has
// its ID, sequence, root and depth). The batch holds checks, puts and
// deletes in the extension's own namespaces, not Emit; nil is nothing to
// write. It runs inside the host's transaction, bounded at 250 ms: it must
// be pure and deterministic and may not call the host (r.Host's calls are
// refused reentrant_call). An error, or a check that fails, aborts the
// whole emission: the Event is not accepted, and the caller gets the
// error.
type CommitFunc func(ctx context.Context, r *Request, ev Event) (*Batch, error)

// Commit declares that an emit operation's records commit with its Event,
// answered by fn (manifest commit: true). Given to an operation that is not
// an emit operation, Operation panics.
func Commit(fn CommitFunc) OperationOption {
	if fn == nil {
		panic("sdk: Commit: nil function")
	}
	return func(d *protocol.Operation, o *operation) {
		d.Commit = true
		o.commit = fn
	}
}

// serveEmit serves operation.emit and emit.commit when an operation needs
// them.
func (s *server) serveEmit(t *jsonrpc.Table) {
	var emits, commits bool
	for _, op := range s.x.operations {
		emits = emits || op.emit != nil
		commits = commits || op.commit != nil
	}
	if emits {
		jsonrpc.Serve(t, protocol.OperationEmitPlan, s.operationEmit)
	}
	if commits {
		jsonrpc.Serve(t, protocol.EmitCommit, s.emitCommit)
	}
}

func (s *server) operationEmit(ctx context.Context, p protocol.OperationEmitParams) (protocol.OperationEmitResult, error) {
	op, ok := s.x.operations[p.Operation]
	if !ok || op.emit == nil {
		return protocol.OperationEmitResult{}, protocol.Errorf(protocol.ErrUndeclared, "operation %q is not an emit operation of %s", p.Operation, s.x.Manifest.Name)
	}
	r := &Request{Host: s.host, Authority: p.Authority, RequestID: p.RequestID,
		Method: protocol.MethodOperationEmit, Name: p.Operation}
	d, err := op.emit(ctx, r, p.Input)
	if err != nil {
		return protocol.OperationEmitResult{}, err
	}
	return protocol.OperationEmitResult{Event: d}, nil
}

func (s *server) emitCommit(ctx context.Context, p protocol.EmitCommitParams) (protocol.EmitCommitResult, error) {
	op, ok := s.x.operations[p.Operation]
	if !ok || op.commit == nil {
		return protocol.EmitCommitResult{}, protocol.Errorf(protocol.ErrUndeclared, "operation %q is not an emit operation of %s that commits", p.Operation, s.x.Manifest.Name)
	}
	ctx = context.WithValue(ctx, inTxKey{}, true)
	r := &Request{Host: s.host, Authority: p.Authority, RequestID: p.RequestID,
		Method: protocol.MethodEmitCommit, Name: p.Operation}
	b, err := op.commit(ctx, r, p.Event)
	if err != nil {
		return protocol.EmitCommitResult{}, err
	}
	if b == nil || b.Empty() {
		return protocol.EmitCommitResult{}, nil
	}
	if len(b.p.Emissions) > 0 {
		return protocol.EmitCommitResult{}, fmt.Errorf("emit.commit of %s: the records carry KV checks and writes only; emit the Event itself from the operation", p.Operation)
	}
	return protocol.EmitCommitResult{Records: &b.p}, nil
}
