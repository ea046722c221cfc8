package pages

import (
	"strings"

	"github.com/open-conduit/open-conduit/tui/common"
)

// filtered is a list's rows as its filter narrows them: the indexes of
// the rows that match, worked out once per change of rows or filter, not
// per key or per frame, so a list of 20,000 rows stays cheap to move
// through. With no filter nothing is matched: every row is shown.
type filtered struct {
	// n is how many rows there are; fields gives a row's fields.
	n      int
	fields func(i int) []string
	// hay is each row's fields, lower-cased and joined, so matching a
	// row is a few substring searches; made when a filter first needs
	// it after the rows changed.
	hay []string
	// shown are the indexes of the matching rows, in order; query is the
	// filter they were worked out for.
	shown []int
	query string
}

// set takes n rows whose fields fields gives, and works the matches out
// again.
func (f *filtered) set(n int, fields func(i int) []string, filter *common.Filter) {
	f.n, f.fields, f.hay = n, fields, f.hay[:0]
	f.refilter(filter, true)
}

// refilter works the matches out when the filter changed (or always,
// with all). A filter that only grew narrows the rows it matched before.
func (f *filtered) refilter(filter *common.Filter, all bool) {
	q := filter.Query()
	if !all && q == f.query {
		return
	}
	narrow := !all && f.query != "" && strings.HasPrefix(q, f.query)
	f.query = q
	if strings.TrimSpace(q) == "" {
		f.shown = f.shown[:0]
		for i := range f.n {
			f.shown = append(f.shown, i)
		}
		return
	}
	if len(f.hay) != f.n {
		f.hay = f.hay[:0]
		for i := range f.n {
			f.hay = append(f.hay, lowerJoin(f.fields(i)))
		}
	}
	// The filter's words, lowered once: as common.Filter.Match, a row
	// matches when each word is in one of its fields.
	words := strings.Fields(strings.ToLower(q))
	match := func(h string) bool {
		for _, w := range words {
			if !strings.Contains(h, w) {
				return false
			}
		}
		return true
	}
	shown := make([]int, 0, len(f.shown))
	if narrow {
		for _, i := range f.shown {
			if match(f.hay[i]) {
				shown = append(shown, i)
			}
		}
	} else {
		for i, h := range f.hay {
			if match(h) {
				shown = append(shown, i)
			}
		}
	}
	f.shown = shown
}

// lowerJoin is the fields lower-cased and joined by NULs (no word of a
// filter spans two fields), in one allocation for ASCII text.
func lowerJoin(fields []string) string {
	n := len(fields)
	for _, f := range fields {
		n += len(f)
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c >= 0x80 {
				// Not ASCII: let strings lower the rest properly.
				return strings.ToLower(strings.Join(fields, "\x00"))
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
		}
		b = append(b, 0)
	}
	return string(b)
}

// len is how many rows match.
func (f *filtered) len() int { return len(f.shown) }

// windowTable renders n rows under a header row, windowed around the
// cursor to fit height lines; row(i) makes the cells of the i-th shown
// row, and is asked only for the rows in the window.
func windowTable(c *common.Common, cols []common.Column, n, cur, height int, row func(i int) []string) []string {
	widths := common.Widths(cols, c.Width)
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.Name
	}
	lines := []string{c.Styles.Header.Render(common.Row(names, widths, c.Width))}
	body := height - 1
	first := common.Window(max(0, cur), n, body)
	for i := first; i < n && i < first+body; i++ {
		line := common.Row(row(i), widths, c.Width)
		if i == cur {
			line = c.Styles.Selected.Render(line)
		}
		lines = append(lines, line)
	}
	return lines
}
