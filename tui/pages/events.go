package pages

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/tui/common"
)

// MaxEvents bounds the Events the tail keeps; older ones scroll away.
const MaxEvents = 500

// Events is the live tail of the event log, newest at the bottom. It
// follows the newest Event unless the cursor was moved up.
type Events struct {
	c      *common.Common
	events []protocol.Event
	cur    cursor
	follow bool
}

// NewEvents returns the Events pane.
func NewEvents(c *common.Common) *Events { return &Events{c: c, follow: true} }

// Title implements Page.
func (p *Events) Title() string { return "Events" }

// Modal implements Page.
func (p *Events) Modal() bool { return false }

// Status implements Page.
func (p *Events) Status() string { return "" }

// Update implements Page.
func (p *Events) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.EventsMsg:
		p.events = append(p.events, msg.Events...)
		if over := len(p.events) - MaxEvents; over > 0 {
			p.events = append([]protocol.Event(nil), p.events[over:]...)
			p.cur.at = max(0, p.cur.at-over)
		}
		if p.follow {
			p.cur.at = len(p.events) - 1
		}
	case tea.KeyPressMsg:
		if p.cur.moveKeys(p.c, msg, len(p.events)) {
			p.follow = p.cur.at == len(p.events)-1
		}
	}
	return nil
}

var eventColumns = []common.Column{
	col("SEQ", 6), col("SCOPE", 10), col("SOURCE", 12), col("TYPE", 20), col("WORK", 0),
}

// View implements Page.
func (p *Events) View(height int) string {
	if len(p.events) == 0 {
		return "no Events yet; waiting for the next"
	}
	rows := make([][]string, len(p.events))
	for i, e := range p.events {
		rows[i] = []string{strconv.FormatUint(e.Sequence, 10), e.Scope, e.Source, e.Type,
			common.Dash(strings.Join(e.Works, ","))}
	}
	return strings.Join(table(p.c, eventColumns, rows, p.cur.at, height), "\n")
}
