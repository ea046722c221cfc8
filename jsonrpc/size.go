package jsonrpc

import (
	"bytes"
	"math"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// No side writes a line over the message bound. A request or notification
// too big to send fails its caller with too_large before anything is
// written, and an answer too big to send is replaced by a too_large error to
// the same id; the connection stays up either way. A request is measured as
// encoded (encodeRequest); an answer's size below is the library's envelope
// exactly, so a message at the bound still goes.

const (
	answerHead = len(`{"jsonrpc":"2.0","id":`)
	resultKey  = len(`,"result":`)
)

// answerLen is the length of a successful answer's line, without its
// newline.
func answerLen(id jsonrpc2.ID, result []byte) int {
	return answerHead + idLen(id) + resultKey + max(len(result), len("null")) + 1
}

// idLen is the length of an id as the library writes it.
func idLen(id jsonrpc2.ID) int {
	if n, ok := id.Number(); ok {
		return digits(n)
	}
	if s, ok := id.StringValue(); ok {
		return quotedLen(s)
	}
	return len("null")
}

// digits is the length of n in decimal.
func digits(n int64) int {
	d := 1
	if n < 0 {
		d++
		if n == math.MinInt64 {
			return 20
		}
		n = -n
	}
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// quotedLen bounds the length of s as a JSON string: exact for plain ASCII,
// and no shorter than its longest escaping otherwise.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			n += 6
		} else {
			n++
		}
	}
	return n
}

// fits refuses a message whose line would pass the bound: n is its length
// as framed, payload the part that may hold U+2028/U+2029, which the guard
// writes as six-byte escapes. Only a payload that could reach the bound that
// way is searched for them.
func (c *Conn) fits(method, what string, n int, payload []byte) error {
	limit := c.opts.MaxMessageBytes
	if n+len(payload) > limit {
		n += 3 * (bytes.Count(payload, lineSep) + bytes.Count(payload, paraSep))
	}
	if n <= limit {
		return nil
	}
	if what == "answer" {
		return protocol.Errorf(protocol.ErrTooLarge,
			"%s: the answer is %d bytes, over the %d-byte bound of one message, so it was not sent; answer less at a time (page it, or hand large data over as an artifact)",
			method, n, limit)
	}
	return protocol.Errorf(protocol.ErrTooLarge,
		"%s: the %s is %d bytes, over the %d-byte bound of one message, so nothing was sent and the connection stays up; send less at a time (large data goes as an artifact, in chunks)",
		method, what, n, limit)
}
