package jsonlex

import "testing"

func TestStringEndSkipsEscapedQuotes(t *testing.T) {
	for _, c := range []struct {
		in      string
		end     int
		escaped bool
		ok      bool
	}{
		{`"abc" x`, 5, false, true},
		{`""`, 2, false, true},
		{`"a\"b"`, 6, true, true},
		{`"a\\"b"`, 5, true, true},
		{`"a\\\"" `, 7, true, true},
		{`"abc`, 0, false, false},
		{`"a\"`, 0, true, false},
		{`"a\`, 0, false, false},
		{`abc"`, 0, false, false},
		{``, 0, false, false},
	} {
		end, escaped, ok := StringEnd([]byte(c.in), 0)
		if end != c.end || escaped != c.escaped || ok != c.ok {
			t.Errorf("StringEnd(%q) = %d, %v, %v; want %d, %v, %v", c.in, end, escaped, ok, c.end, c.escaped, c.ok)
		}
	}
}

func TestSkipSpaceStopsAtTheFirstOtherByte(t *testing.T) {
	for in, want := range map[string]int{"": 0, "x": 0, " \t\r\nx": 4, "   ": 3, "\v": 0} {
		if got := SkipSpace([]byte(in), 0); got != want {
			t.Errorf("SkipSpace(%q) = %d, want %d", in, got, want)
		}
	}
}

// plainRef is PlainPrefix a byte at a time: the reference the word test
// is held to.
func plainRef(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

func TestPlainPrefixStopsAtTheFirstByteAStringEscapes(t *testing.T) {
	// Every byte value at every position of strings up to 24 bytes, so
	// each lands in the word loop and in the byte loop.
	for n := 1; n <= 24; n++ {
		for p := range n {
			for c := range 256 {
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a' + byte(i%26)
				}
				b[p] = byte(c)
				s := string(b)
				if got, want := PlainPrefix(s), plainRef(s); got != want {
					t.Fatalf("%q: PlainPrefix %d, want %d", s, got, want)
				}
			}
		}
	}
	if got := PlainPrefix(""); got != 0 {
		t.Errorf("empty: %d", got)
	}
}
