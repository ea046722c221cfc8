package jsonrpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestEveryWireCodeCrossesTheWire maps each code onto the wire and back.
// Codes that never cross (host diagnostics) go out as internal.
func TestEveryWireCodeCrossesTheWire(t *testing.T) {
	for _, e := range protocol.Codes() {
		sent := fmt.Errorf("while serving: %w", protocol.Errorf(e.Err, "detail for %s", e.Code))
		wire, unauthored := toWire(sent)
		got := fromWire(wire)
		if !e.Wire {
			if !unauthored || got.Code != protocol.CodeInternal {
				t.Errorf("%s must not cross the wire, crossed as %s", e.Code, got.Code)
			}
			continue
		}
		if unauthored || got.Code != e.Code || got.Message != sent.Error() || !errors.Is(got, e.Err) {
			t.Errorf("%s crossed as %+v (rpc %d)", e.Code, got, wire.Code)
		}
		if int(wire.Code) != protocol.RPCCode(e.Code) {
			t.Errorf("%s travelled under %d, want %d", e.Code, wire.Code, protocol.RPCCode(e.Code))
		}
	}
	wire, unauthored := toWire(errors.New("secret detail"))
	if !unauthored || fromWire(wire).Code != protocol.CodeInternal || fromWire(wire).Message != "internal error" {
		t.Errorf("an unauthored error crossed as %+v", fromWire(wire))
	}
	retry := &protocol.Error{Code: protocol.CodeRetryAfter, Message: "rate limited", ResetAt: "2026-12-01T00:00:00Z"}
	wire, _ = toWire(retry)
	if got := fromWire(wire); got.ResetAt != retry.ResetAt {
		t.Errorf("reset_at lost: %+v", got)
	}
}
