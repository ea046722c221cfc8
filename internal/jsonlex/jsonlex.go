// Package jsonlex is the lexing steps the hand-written JSON readers and
// writers of jsonrpc's request scan and the SDK's in-place schema check and
// flat codec share: skipping whitespace, finding where a string ends, and
// finding the run of bytes a string holds as they are. What each reader
// accepts beyond that is its own, held by its own fuzz test to the decoder
// it stands in for. protocol's envelope and chunk codecs keep a whitespace
// skip and a plain-byte test of their own: protocol imports nothing of this
// module.
package jsonlex

import (
	"bytes"
	"encoding/binary"
)

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// StringEnd finds the end of the string whose opening quote is b[i]: the
// index just past the first quote not taken by a backslash (which takes the
// byte after it, whatever it is), and whether the string has a backslash.
// It reports false when b[i] is not a quote or the string does not end. It
// searches with bytes.IndexByte and looks for each quote once: an escape
// before the next quote moves only the backslash search on.
func StringEnd(b []byte, i int) (end int, escaped, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	i++
	q := -1 // the next quote at or after i, once found
	for {
		if i >= len(b) {
			return 0, escaped, false
		}
		if q < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return 0, escaped, false
			}
			q = i + k
		}
		k := bytes.IndexByte(b[i:q], '\\')
		if k < 0 {
			return q + 1, escaped, true
		}
		escaped = true
		i += k + 2
	}
}

// PlainPrefix returns the length of the longest prefix of s whose bytes a
// JSON string holds as they are, which every encoder writes unchanged
// between the quotes: printable ASCII (0x20 to 0x7f) other than the quote
// and the backslash. It tests eight bytes at a time.
func PlainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !plainWord(binary.LittleEndian.Uint64([]byte(s[i : i+8]))) {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// plainWord reports whether all eight bytes of x are plain: none under
// 0x20, none with the high bit set, no quote and no backslash. Each test is
// the exact "some byte is zero" bit trick, on x or on x with the byte
// looked for XORed away.
func plainWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - lo) &^ v & hi }
	return (x&hi | (x-lo*0x20)&^x&hi | zero(x^(lo*'"')) | zero(x^(lo*'\\'))) == 0
}
