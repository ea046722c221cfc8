package pages

import (
	"strings"

	"github.com/open-conduit/open-conduit/tui/common"
)

// filtered is a list's rows as its filter narrows them: the indexes of
// the rows that match, worked out once per change of rows or filter, not
// per key or per frame, so a list of 20,000 rows stays cheap to move
// through.
type filtered struct {
	// hay is each row's fields, lower-cased and joined, so matching a
	// row is a few substring searches.
	hay []string
	// shown are the indexes of the matching rows, in order; query is the
	// filter they were worked out for.
	shown []int
	query string
}

// set takes the rows' fields (one slice of fields per row) and works the
// matches out again.
func (f *filtered) set(fields [][]string, filter *common.Filter) {
	f.hay = f.hay[:0]
	for _, fs := range fields {
		f.hay = append(f.hay, strings.ToLower(strings.Join(fs, "\x00")))
	}
	f.refilter(filter, true)
}

// refilter works the matches out when the filter changed (or always,
// with all). A filter that only grew narrows the rows it matched before.
func (f *filtered) refilter(filter *common.Filter, all bool) {
	q := filter.Query()
	if !all && q == f.query {
		return
	}
	shown := make([]int, 0, len(f.hay))
	if !all && f.query != "" && strings.HasPrefix(q, f.query) {
		for _, i := range f.shown {
			if filter.Match(f.hay[i]) {
				shown = append(shown, i)
			}
		}
	} else {
		for i, h := range f.hay {
			if filter.Match(h) {
				shown = append(shown, i)
			}
		}
	}
	f.shown, f.query = shown, q
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
