package jsonrpc

import (
	"bytes"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/internal/jsonlex"
)

// The request scanner: one pass over a line that begins as a Go peer writes
// a request, {"jsonrpc":"2.0","method":"…", which finds its method, params
// and id. It accepts exactly what the library's scanner (ScanMessageView)
// accepts, and gives the same method, params and id, for the lines it
// claims; anything unusual (an escaped method or string id, a member given
// twice, a result or error beside the method, an id that is not a plain
// integer, a string or null) it leaves to ScanMessageView, which decides.
// The fuzz test holds it to that.
//
// It differs from the library's scanner in speed only: strings, a base64
// artifact chunk above all, are crossed with bytes.IndexByte rather than a
// byte at a time. Like the library's, it checks the structure of the line
// (balanced brackets, closed strings, members in order) but not the grammar
// inside params: the handler decodes them, and refuses them invalid_params
// if they do not decode.

// request is one incoming request as scanned: method and params borrow the
// line.
type request struct {
	method []byte // the name as sent, without escapes
	params []byte // nil when absent or null
	id     jsonrpc2.ID
	isCall bool
	nullID bool // "id": null, which this side refuses
}

// scanRequestLine scans a line beginning with requestPrefix. ok is false
// when the line is anything but a plain request or notification, which
// ScanMessageView then reads.
func scanRequestLine(frame []byte) (r request, ok bool) {
	if !bytes.HasPrefix(frame, requestPrefix) {
		return r, false
	}
	end, ok := stringEnd(frame, len(requestPrefix)-1)
	if !ok {
		return r, false
	}
	r.method = frame[len(requestPrefix) : end-1]
	if bytes.IndexByte(r.method, '\\') >= 0 {
		return r, false
	}
	var idSpan, params []byte
	hasID, hasParams := false, false
	i := end
	for {
		i = jsonlex.SkipSpace(frame, i)
		if i >= len(frame) {
			return r, false
		}
		if frame[i] == '}' {
			i++
			break
		}
		if frame[i] != ',' {
			return r, false
		}
		i = jsonlex.SkipSpace(frame, i+1)
		if i >= len(frame) || frame[i] != '"' {
			return r, false
		}
		keyEnd, ok := stringEnd(frame, i)
		if !ok {
			return r, false
		}
		key := frame[i:keyEnd]
		i = jsonlex.SkipSpace(frame, keyEnd)
		if i >= len(frame) || frame[i] != ':' {
			return r, false
		}
		i = jsonlex.SkipSpace(frame, i+1)
		valEnd, ok := scanValue(frame, i)
		if !ok {
			return r, false
		}
		val := frame[i:valEnd]
		i = valEnd
		switch string(key) {
		case `"params"`:
			if hasParams {
				return r, false
			}
			hasParams, params = true, val
		case `"id"`:
			if hasID {
				return r, false
			}
			hasID, idSpan = true, val
		case `"jsonrpc"`, `"method"`, `"result"`, `"error"`:
			return r, false
		}
	}
	if jsonlex.SkipSpace(frame, i) != len(frame) {
		return r, false
	}
	if hasParams && !isNull(params) {
		r.params = params
	}
	switch {
	case !hasID:
	case isNull(idSpan):
		r.nullID = true
	case idSpan[0] == '"':
		body := idSpan[1 : len(idSpan)-1]
		if bytes.IndexByte(body, '\\') >= 0 {
			return r, false
		}
		r.id, r.isCall = jsonrpc2.NewStringID(string(body)), true
	default:
		n, ok := parseInt64(idSpan)
		if !ok {
			return r, false
		}
		r.id, r.isCall = jsonrpc2.NewNumberID(n), true
	}
	return r, true
}

// scanAnswerLine reads a successful answer as a Go peer writes it,
// {"jsonrpc":"2.0","id":N,"result":…}, with nothing between the members and
// nothing after the result but the closing brace and spaces. It returns the
// id and the result's span (borrowing the line). ok is false for every other
// line, which ScanMessageView then reads; for the lines it claims it agrees
// with ScanMessageView (same id, same result), as the fuzz test holds it. It
// exists for speed: the library's scanner takes several times as long to
// find the same two spans, once per answer on the calling side.
func scanAnswerLine(frame []byte) (id int64, result []byte, ok bool) {
	if !bytes.HasPrefix(frame, answerPrefix) {
		return 0, nil, false
	}
	i := len(answerPrefix)
	if i >= len(frame) {
		return 0, nil, false
	}
	idEnd, ok := scanNumber(frame, i)
	if !ok {
		return 0, nil, false
	}
	if id, ok = parseInt64(frame[i:idEnd]); !ok {
		return 0, nil, false
	}
	if !bytes.HasPrefix(frame[idEnd:], resultMember) {
		return 0, nil, false
	}
	i = idEnd + len(resultMember)
	end, ok := scanValue(frame, i)
	if !ok || end >= len(frame) || frame[end] != '}' || jsonlex.SkipSpace(frame, end+1) != len(frame) {
		return 0, nil, false
	}
	return id, frame[i:end], true
}

func isNull(span []byte) bool { return string(span) == "null" }

// parseInt64 reads an id the library takes for a number: an optional minus
// and decimal digits only, within int64.
func parseInt64(span []byte) (int64, bool) {
	i, neg := 0, false
	if len(span) > 0 && span[0] == '-' {
		i, neg = 1, true
	}
	if i == len(span) {
		return 0, false
	}
	const maxInt64 = uint64(1<<63 - 1)
	limit := maxInt64
	if neg {
		limit++
	}
	var n uint64
	for ; i < len(span); i++ {
		c := span[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// scanValue returns the end of the JSON value that begins at data[i], as the
// library's scanner finds it.
func scanValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; c {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		return scanContainer(data, i)
	case 't':
		return scanLiteral(data, i, "true")
	case 'f':
		return scanLiteral(data, i, "false")
	case 'n':
		return scanLiteral(data, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return scanNumber(data, i)
		}
		return 0, false
	}
}

// scanContainer returns the end of the object or array that begins at
// data[i], by bracket balance and strings only, as the library's scanner
// does: the grammar inside is the decoder's to check.
func scanContainer(data []byte, i int) (int, bool) {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			j, ok := stringEnd(data, i)
			if !ok {
				return 0, false
			}
			i = j
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
		i++
	}
	return 0, false
}

// scanNumber returns the end of the JSON number that begins at data[i].
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	if i >= len(data) {
		return 0, false
	}
	switch {
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return 0, false
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return 0, false
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	return i, true
}

// scanLiteral matches true, false or null at data[i].
func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if i+len(lit) > len(data) || string(data[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// stringEnd is jsonlex.StringEnd without the escape flag.
func stringEnd(data []byte, i int) (int, bool) {
	end, _, ok := jsonlex.StringEnd(data, i)
	return end, ok
}
