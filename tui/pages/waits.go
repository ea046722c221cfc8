package pages

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Waits is the active Waits pane: what each waiting Work waits for, who
// declared it, its progress line and the time left to its due time.
type Waits struct {
	c     *common.Common
	waits []client.Wait
	cur   cursor
}

// NewWaits returns the Waits pane.
func NewWaits(c *common.Common) *Waits { return &Waits{c: c} }

// Title implements Page.
func (p *Waits) Title() string { return "Waits" }

// Modal implements Page.
func (p *Waits) Modal() bool { return false }

// Status implements Page.
func (p *Waits) Status() string { return "" }

// Update implements Page.
func (p *Waits) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.waits = msg.Waits
		p.cur.clamp(len(p.waits))
	case tea.KeyPressMsg:
		p.cur.moveKeys(p.c, msg, len(p.waits))
	}
	return nil
}

var waitColumns = []common.Column{
	col("DESCRIPTION", 24), col("OWNER", 12), col("DUE IN", 7), col("PROGRESS", 0),
}

// View implements Page.
func (p *Waits) View(height int) string {
	if len(p.waits) == 0 {
		return "no Work waits"
	}
	now := p.c.Now()
	rows := make([][]string, len(p.waits))
	for i, w := range p.waits {
		due := "-"
		if !w.Due.IsZero() {
			due = common.Short(w.Due.Sub(now))
		}
		desc := w.Description
		if desc == "" {
			desc = "Work " + w.Work
		}
		owner := w.Owner
		if owner == "" {
			owner = "builtin"
		}
		rows[i] = []string{desc, owner, due, common.Dash(w.Progress)}
	}
	return strings.Join(table(p.c, waitColumns, rows, p.cur.at, height), "\n")
}
