package pebblekv

import (
	"bytes"
	"fmt"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// OpResult is a handler operation's committed result, replayed to a retry
// of the call with the same request ID.
type OpResult struct {
	Operation string           `json:"operation"`
	Output    protocol.Payload `json:"output"`
	At        time.Time        `json:"at"`
}

// opResultKey is the key of (pkg, request ID)'s result.
func opResultKey(pkg, requestID string) []byte { return famKey(famOpResult, requestID, pkg) }

// PutOpResult commits a handler operation's result under (pkg, request
// ID), once: writing the same result again changes nothing, so a caller
// may commit after a retry it could not tell from the first call.
//
// # Refusals
//
// An empty package, request ID or operation, or a request ID over
// protocol.MaxKeyBytes, is protocol.ErrInvalid; an output over
// protocol.MaxPayloadBytes is protocol.ErrTooLarge. Another result under
// the same (pkg, request ID) is protocol.ErrConflict: read it
// (OpResult) and replay it, or call with a new request ID. A refusal
// writes nothing.
func (tx *Tx) PutOpResult(pkg, requestID string, res OpResult) error {
	switch {
	case pkg == "" || requestID == "":
		return protocol.Errorf(protocol.ErrInvalid, "an operation result needs its package and request ID")
	case len(requestID) > protocol.MaxKeyBytes:
		return protocol.Errorf(protocol.ErrInvalid, "request ID is %d bytes; keep it within %d", len(requestID), protocol.MaxKeyBytes)
	case res.Operation == "":
		return protocol.Errorf(protocol.ErrInvalid, "the result of request %q needs its operation", requestID)
	case protocol.PayloadSize(res.Output) > protocol.MaxPayloadBytes:
		return protocol.Errorf(protocol.ErrTooLarge, "operation %s's output is %d bytes; keep it within %d", res.Operation, protocol.PayloadSize(res.Output), protocol.MaxPayloadBytes)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return protocol.Errorf(protocol.ErrInvalid, "operation %s's output cannot be encoded (its data must be valid JSON): %v", res.Operation, err)
	}
	key := opResultKey(pkg, requestID)
	stored, found, err := tx.get(key)
	if err != nil {
		return err
	}
	if found {
		if bytes.Equal(stored, raw) {
			return nil
		}
		return protocol.Errorf(protocol.ErrConflict, "request %q of %s already has a committed result; replay it, or call with a new request ID", requestID, pkg)
	}
	return tx.set(key, raw)
}

// OpResult reads the result committed under (pkg, request ID); found
// false means there is none.
func (r *Reader) OpResult(pkg, requestID string) (res OpResult, found bool, err error) {
	if pkg == "" || requestID == "" {
		return OpResult{}, false, nil
	}
	raw, found, err := r.get(opResultKey(pkg, requestID))
	if err != nil || !found {
		return OpResult{}, false, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return OpResult{}, false, fmt.Errorf("pebblekv: decode the result of %s's request %q: %w", pkg, requestID, err)
	}
	return res, true, nil
}
