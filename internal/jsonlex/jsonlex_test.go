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
