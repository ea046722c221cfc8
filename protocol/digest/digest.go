// Package digest computes what the protocol derives from content with
// SHA-256: a stored value's KV version, an emitted Event's id and an
// observation's envelope. Hosts and test hosts use it; an extension does
// not need it.
//
// It is a package of its own so that protocol, which every extension
// binary links, does not import crypto/sha256: that package brings the
// whole FIPS 140 module, whose initialization adds about 0.1 ms to every
// start of every extension.
package digest

import (
	"crypto/sha256"
	"encoding/hex"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// KVVersion is the version of a stored value: the first 16 bytes of the
// SHA-256 of its bytes, in lower-case hex. An absent key has the empty
// version.
func KVVersion(value []byte) string {
	sum := sha256.Sum256(value)
	return hex.EncodeToString(sum[:16])
}

// EmittedEventID names an emitted Event before it commits, so a
// transaction's own records can name it, and emitting it again is the same
// Event: "ev_" and the first 16 bytes of the SHA-256 of source, a NUL byte
// and deliveryID, in lower-case hex.
func EmittedEventID(source, deliveryID string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + deliveryID))
	return "ev_" + hex.EncodeToString(sum[:16])
}

// ObservationEnvelope is the canonical signature of what an observation
// says: a digest of its scope, type and payload, the payload's data in
// canonical JSON, so two encodings of the same value sign the same. typ is
// the Event type the host settled on (the observation's, or the source's
// only family).
func ObservationEnvelope(o protocol.Observation, typ string) (string, error) {
	data := jsontext.Value(append([]byte(nil), o.Payload.Data...))
	if len(data) > 0 {
		if err := data.Canonicalize(); err != nil {
			return "", protocol.Errorf(protocol.ErrInvalid, "observation %s@%s: its payload data is not JSON: %v", o.Item, o.Version, err)
		}
	}
	env, err := json.Marshal(struct {
		Scope  string         `json:"scope_id"`
		Type   string         `json:"type"`
		Schema string         `json:"schema"`
		Data   jsontext.Value `json:"data,omitzero"`
	}{o.Scope, typ, o.Payload.Schema, data})
	if err != nil {
		return "", protocol.Errorf(protocol.ErrInvalid, "observation %s@%s cannot be encoded: %v", o.Item, o.Version, err)
	}
	sum := sha256.Sum256(env)
	return hex.EncodeToString(sum[:]), nil
}
