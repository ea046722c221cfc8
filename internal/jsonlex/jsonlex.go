// Package jsonlex is the two lexing steps the hand-written JSON readers of
// jsonrpc's request scan and the SDK's in-place schema check and flat
// codec share:
// skipping whitespace and finding where a string ends. What each reader
// accepts beyond that is its own, held by its own fuzz test to the decoder
// it stands in for. protocol's envelope and chunk codecs keep a whitespace
// skip of their own: protocol imports nothing of this module.
package jsonlex

import "bytes"

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
