package session

import (
	"bytes"
	"strconv"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// announced is initialize's result as the host reads it. Decoding the
// announced manifest and putting it in canonical form to compare with the
// package's was most of the host's part of a start; an extension built on
// the SDK writes its manifest exactly as protocol.InitializeResult's
// AppendJSON does, and when those bytes are the package manifest's own,
// written the same way, they decode to the same manifest: the answer is
// taken without decoding it. Any other answer (another SDK's, whitespace,
// members in another order, a manifest that differs) decodes as before
// and is compared semantically.
type announced struct {
	// written gives the package manifest as AppendJSON writes it, or nil
	// (every answer decodes); it is asked when the answer arrives, so the
	// request never waits for it.
	written func() []byte
	result  protocol.InitializeResult
	// verbatim reports that the manifest was written's bytes, and was not
	// decoded into result.
	verbatim bool
}

// UnmarshalJSONOnePass reads the answer: jsonrpc's result decoding calls
// it in place of json.Unmarshal.
func (a *announced) UnmarshalJSONOnePass(data []byte) error {
	var manifest []byte
	if a.written != nil {
		manifest = a.written()
	}
	if v, ok := verbatimAnswer(data, manifest); ok {
		a.result.ProtocolVersion, a.verbatim = v, true
		return nil
	}
	return json.Unmarshal(data, &a.result)
}

// verbatimAnswer reports whether data is {"protocol_version":N,
// "manifest":M} with M exactly manifest, as AppendJSON writes it, and
// returns N.
func verbatimAnswer(data, manifest []byte) (int, bool) {
	const head, member = `{"protocol_version":`, `,"manifest":`
	if len(manifest) == 0 || !bytes.HasPrefix(data, []byte(head)) {
		return 0, false
	}
	rest := data[len(head):]
	n := 0
	for n < len(rest) && n < 9 && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || rest[0] == '0' && n > 1 {
		return 0, false
	}
	v, err := strconv.Atoi(string(rest[:n]))
	rest = rest[n:]
	if err != nil || !bytes.HasPrefix(rest, []byte(member)) {
		return 0, false
	}
	rest = rest[len(member):]
	if len(rest) != len(manifest)+1 || rest[len(manifest)] != '}' || !bytes.Equal(rest[:len(manifest)], manifest) {
		return 0, false
	}
	return v, true
}
