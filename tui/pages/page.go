// Package pages holds one page per pane of the dashboard. Each page keeps
// its own cursor and view state, takes the shared messages (a Snapshot,
// new Events) and the keys meant for it, and renders itself into the
// height it is given; the root model draws the header and the help bar.
package pages

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/tui/common"
)

// Page is one pane.
type Page interface {
	// Title is the pane's name in the header.
	Title() string
	// Update takes a message: a key while the pane is shown, or a shared
	// message (common.Snapshot, common.EventsMsg) at any time.
	Update(msg tea.Msg) tea.Cmd
	// View renders the pane in the common width and height lines.
	View(height int) string
	// Modal reports that the pane holds the keys (a question awaits an
	// answer), so tab, esc and q are its own; ctrl+c still quits.
	Modal() bool
	// Status is a line the pane wants shown above the help bar ("" for
	// none): a question, or the answer to an action.
	Status() string
	// HelpKeys are the pane's own keys for the help bar, most used first
	// (the bar drops from the end what the width cannot hold).
	HelpKeys() []key.Binding
}

// brief is b with a shorter description, for the one-line help bar; the
// full key list keeps the long one.
func brief(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// cursor is a list's selected row.
type cursor struct{ at int }

// moveKeys moves the cursor for the up and down keys over rows rows
// and reports whether the key was one of them.
func (c *cursor) moveKeys(cm *common.Common, msg tea.KeyPressMsg, rows int) bool {
	switch {
	case key.Matches(msg, cm.Keys.Up):
		c.at = max(0, c.at-1)
	case key.Matches(msg, cm.Keys.Down):
		c.at = min(max(0, rows-1), c.at+1)
	default:
		return false
	}
	return true
}

// clamp keeps the cursor on a row after the rows changed.
func (c *cursor) clamp(rows int) {
	c.at = min(max(0, rows-1), max(0, c.at))
}

// table renders rows under a header row, windowed around the cursor (-1
// for no cursor) to fit height lines.
func table(c *common.Common, cols []common.Column, rows [][]string, cur, height int) []string {
	return windowTable(c, cols, len(rows), cur, height, func(i int) []string { return rows[i] })
}

// col is a table column.
func col(name string, width int) common.Column { return common.Column{Name: name, Width: width} }
