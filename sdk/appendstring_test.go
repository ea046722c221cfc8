package sdk

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAppendStringMatchesAppendQuote holds appendString's plain fast path
// to the JSON package's quoting, byte for byte, on strings of every byte
// (control bytes, quotes, backslashes, DEL, valid and broken UTF-8, U+2028).
func TestAppendStringMatchesAppendQuote(t *testing.T) {
	fixed := []string{"", "plain text", "a\"b", `a\b`, "tab\there", "del\x7f", "é", "\u2028", "\xff", "<&>", "0123456789abcdef0123456789"}
	r := rand.New(rand.NewPCG(3, 4))
	pool := []string{"a", "Z", " ", "~", "\x7f", "\"", "\\", "\n", "\x00", "é", "\u2028", "\xff", "\xe2\x80", "<", "&"}
	for range 20000 {
		var b []byte
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				b = append(b, pool[r.IntN(len(pool))]...)
			} else {
				b = append(b, byte(0x20+r.IntN(0x5f)))
			}
		}
		fixed = append(fixed, string(b))
	}
	for _, s := range fixed {
		got, ok := appendString([]byte("x"), s)
		want, err := jsontext.AppendQuote([]byte("x"), s)
		if ok != (err == nil) {
			t.Fatalf("%q: ok %v, AppendQuote error %v", s, ok, err)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("%q: wrote %s, AppendQuote %s", s, got, want)
		}
	}
}
