package pages

import (
	"charm.land/bubbles/v2/key"
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
	// rows are the Waits the filter lets through.
	rows   filtered
	filter common.Filter
	cur    cursor
}

// NewWaits returns the Waits pane.
func NewWaits(c *common.Common) *Waits { return &Waits{c: c} }

// Title implements Page.
func (p *Waits) Title() string { return "Waits" }

// Modal implements Page: a filter being typed holds the keys.
func (p *Waits) Modal() bool { return p.filter.Typing() }

// HelpKeys implements Page.
func (p *Waits) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{k.Down, k.Filter}
}

// Status implements Page.
func (p *Waits) Status() string { return p.filter.Status() }

// Update implements Page.
func (p *Waits) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.waits = msg.Waits
		waits := p.waits
		p.rows.set(len(waits), func(i int) []string {
			w := waits[i]
			return []string{w.Description, w.Owner, w.Work, w.Scope, w.Progress, w.State}
		}, &p.filter)
		p.cur.clamp(p.rows.len())
	case tea.KeyPressMsg:
		if p.filter.Key(p.c.Keys, msg) {
			p.rows.refilter(&p.filter, false)
			p.cur.clamp(p.rows.len())
			return nil
		}
		p.cur.moveKeys(p.c, msg, p.rows.len())
	}
	return nil
}

var waitColumns = []common.Column{
	col("DESCRIPTION", 24), col("OWNER", 12), col("DUE IN", 7), col("PROGRESS", 0),
}

// View implements Page.
func (p *Waits) View(height int) string {
	switch {
	case len(p.waits) == 0:
		return "no Work waits"
	case p.rows.len() == 0:
		return "no Wait matches " + p.filter.Query()
	}
	now := p.c.Now()
	return strings.Join(windowTable(p.c, waitColumns, p.rows.len(), p.cur.at, height, func(i int) []string {
		w := p.waits[p.rows.shown[i]]
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
		return []string{desc, owner, due, common.Dash(w.Progress)}
	}), "\n")
}
