package pages

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Extensions is the packages pane: one row per package, with its state,
// process and last error.
type Extensions struct {
	c    *common.Common
	exts []client.Extension
	cur  cursor
}

// NewExtensions returns the Extensions pane.
func NewExtensions(c *common.Common) *Extensions { return &Extensions{c: c} }

// Title implements Page.
func (p *Extensions) Title() string { return "Extensions" }

// Modal implements Page.
func (p *Extensions) Modal() bool { return false }

// Status implements Page.
func (p *Extensions) Status() string { return "" }

// Update implements Page.
func (p *Extensions) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.exts = msg.Extensions.Extensions
		p.cur.clamp(len(p.exts))
	case tea.KeyPressMsg:
		p.cur.moveKeys(p.c, msg, len(p.exts))
	}
	return nil
}

var extensionColumns = []common.Column{
	col("NAME", 14), col("VERSION", 8), col("SOURCE", 9), col("STATE", 10), col("PID", 7),
	col("RST", 3), col("PROTO", 5), col("LAST ERROR", 0),
}

// View implements Page.
func (p *Extensions) View(height int) string {
	if len(p.exts) == 0 {
		return "no packages"
	}
	rows := make([][]string, len(p.exts))
	for i, e := range p.exts {
		pid, proto := "-", "-"
		if e.PID > 0 {
			pid = strconv.Itoa(e.PID)
		}
		if e.Protocol > 0 {
			proto = strconv.Itoa(e.Protocol)
		}
		lastErr := e.LastError
		if e.Code != "" && !strings.Contains(lastErr, e.Code) {
			lastErr = strings.TrimSpace(e.Code + " " + lastErr)
		}
		rows[i] = []string{e.Name, common.Dash(e.Version), e.Source, e.State, pid,
			strconv.Itoa(e.Restarts), proto, common.Dash(lastErr)}
	}
	return strings.Join(table(p.c, extensionColumns, rows, p.cur.at, height), "\n")
}
