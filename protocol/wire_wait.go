package protocol

import (
	"strings"
	"unicode/utf8"
)

// CutLine is s's first line cut to at most max bytes (never inside a
// character): how a host keeps a Wait's description (MaxWaitDescription)
// and progress (MaxWaitProgress), which are cut, never refused.
func CutLine(s string, max int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
