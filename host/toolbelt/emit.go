package toolbelt

import (
	"context"
	"errors"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Emitter is what the toolbelt needs of the engine to serve emit
// operations: the engine's EmitOperation. An Engine without it answers
// every emit operation unsupported.
type Emitter interface {
	EmitOperation(ctx context.Context, x pebblekv.Execution, r engine.EmitRequest) (pebblekv.Event, bool, error)
}

// The daemon's engine emits.
var _ Emitter = (*engine.Engine)(nil)

// EmitAnswer is the output of an emit operation's call: the accepted
// Event, and whether this call accepted it (false: an Event of the same
// identity was already accepted, and nothing was committed now).
type EmitAnswer struct {
	EventID  string `json:"event_id"`
	Sequence uint64 `json:"sequence"`
	Type     string `json:"type"`
	Added    bool   `json:"added"`
}

// emitOperation serves an emit operation: operation.emit on its package,
// outside any transaction, plans the Event; the engine accepts it (with
// the package's emit.commit records when op declares commit) in one
// transaction, which also commits the call's replay record, so a retry
// with the same request ID is answered the same Event and never emits
// twice.
func (s *Server) emitOperation(ctx context.Context, x pebblekv.Execution, pkg string, op protocol.Operation,
	req client.ToolbeltRequest, p protocol.OperationCallParams) (client.ToolbeltAnswer, error) {
	em, ok := s.deps.Engine.(Emitter)
	if !ok {
		return client.ToolbeltAnswer{}, protocol.Errorf(protocol.ErrUnsupported,
			"operation %q is an emit operation, which this host does not serve through the toolbelt", req.Operation)
	}
	ctx, cancel := context.WithTimeout(ctx, s.deps.CallTimeout)
	defer cancel()
	r := engine.EmitRequest{Package: pkg, Call: p, Commit: op.Commit}
	if req.RequestID == "" {
		out, err := s.emit(ctx, x, em, r)
		return answer(out, false), err
	}
	key := replayKey(x.Work, req.RequestID)
	defer s.keys.lock(pkg + "\x00" + key)()
	if ans, found, err := s.replayed(x, pkg, key, req); found || err != nil {
		return ans, err
	}
	r.Within = func(tx *pebblekv.Tx, ev pebblekv.Event, added bool) error {
		out, err := emitPayload(ev, added)
		if err != nil {
			return err
		}
		return tx.PutOpResult(pkg, key, pebblekv.OpResult{Operation: req.Operation, Output: out, At: s.deps.Now()})
	}
	out, err := s.emit(ctx, x, em, r)
	return answer(out, false), err
}

// emit asks the package for the Event and has the engine accept it.
func (s *Server) emit(ctx context.Context, x pebblekv.Execution, em Emitter, r engine.EmitRequest) (protocol.Payload, error) {
	var res protocol.OperationEmitResult
	err := s.deps.Packages.Call(ctx, r.Package, protocol.MethodOperationEmit, r.Call, &res)
	switch {
	case errors.Is(err, protocol.ErrMethodNotFound):
		return protocol.Payload{}, protocol.Errorf(protocol.ErrUnsupported,
			"%s declares emit operation %q but does not serve %s; the package must answer it", r.Package, r.Call.Operation, protocol.MethodOperationEmit)
	case err != nil:
		return protocol.Payload{}, err
	}
	r.Draft = res.Event
	ev, added, err := em.EmitOperation(ctx, x, r)
	if err != nil {
		return protocol.Payload{}, err
	}
	return emitPayload(ev, added)
}

// replayed is the answer committed under key, when there is one: a call
// with the same request ID for another operation of pkg is conflict.
func (s *Server) replayed(x pebblekv.Execution, pkg, key string, req client.ToolbeltRequest) (client.ToolbeltAnswer, bool, error) {
	var (
		done  pebblekv.OpResult
		found bool
	)
	err := s.deps.DB.View(func(r *pebblekv.Reader) (err error) {
		done, found, err = r.OpResult(pkg, key)
		return err
	})
	switch {
	case err != nil:
		return client.ToolbeltAnswer{}, false, err
	case found && done.Operation != req.Operation:
		return client.ToolbeltAnswer{}, true, protocol.Errorf(protocol.ErrConflict,
			"request ID %q was used for operation %q in this Work; give this call a new request ID", req.RequestID, done.Operation)
	case found:
		return answer(done.Output, true), true, nil
	}
	return client.ToolbeltAnswer{}, false, nil
}

func emitPayload(ev pebblekv.Event, added bool) (protocol.Payload, error) {
	b, err := json.Marshal(EmitAnswer{EventID: ev.ID, Sequence: ev.Seq, Type: ev.Type, Added: added})
	return protocol.Payload{Data: b}, err
}
