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
	// rows are the Events the filter lets through; the cursor moves over
	// them.
	rows   filtered
	filter common.Filter
	cur    cursor
	follow bool
}

// NewEvents returns the Events pane.
func NewEvents(c *common.Common) *Events { return &Events{c: c, follow: true} }

// Title implements Page.
func (p *Events) Title() string { return "Events" }

// Modal implements Page: a filter being typed holds the keys.
func (p *Events) Modal() bool { return p.filter.Typing() }

// Status implements Page.
func (p *Events) Status() string { return p.filter.Status() }

// Update implements Page.
func (p *Events) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.EventsMsg:
		was := p.cursorSeq()
		p.events = append(p.events, msg.Events...)
		if over := len(p.events) - MaxEvents; over > 0 {
			p.events = append([]protocol.Event(nil), p.events[over:]...)
		}
		p.refresh(was)
	case tea.KeyPressMsg:
		if p.filter.Key(p.c.Keys, msg) {
			p.rows.refilter(&p.filter, false)
			p.cur.clamp(p.rows.len())
			if p.follow {
				p.cur.at = max(0, p.rows.len()-1)
			}
			return nil
		}
		if p.cur.moveKeys(p.c, msg, p.rows.len()) {
			p.follow = p.cur.at == p.rows.len()-1
		}
	}
	return nil
}

// cursorSeq is the sequence of the Event under the cursor (0 for none).
func (p *Events) cursorSeq() uint64 {
	if p.cur.at < p.rows.len() {
		return p.events[p.rows.shown[p.cur.at]].Sequence
	}
	return 0
}

// refresh works the filter's rows out again after the tail grew, and
// keeps the cursor on the Event it was on, or on the newest when
// following.
func (p *Events) refresh(was uint64) {
	events := p.events
	p.rows.set(len(events), func(i int) []string {
		e := events[i]
		return []string{strconv.FormatUint(e.Sequence, 10), e.Scope, e.Source, e.Type, strings.Join(e.Works, " ")}
	}, &p.filter)
	if p.follow {
		p.cur.at = max(0, p.rows.len()-1)
		return
	}
	p.cur.at = 0
	for i, at := range p.rows.shown {
		if p.events[at].Sequence <= was {
			p.cur.at = i
		}
	}
}

var eventColumns = []common.Column{
	col("SEQ", 6), col("SCOPE", 10), col("SOURCE", 12), col("TYPE", 20), col("WORK", 0),
}

// View implements Page.
func (p *Events) View(height int) string {
	switch {
	case len(p.events) == 0:
		return "no Events yet; waiting for the next"
	case p.rows.len() == 0:
		return "no Event matches " + p.filter.Query()
	}
	return strings.Join(windowTable(p.c, eventColumns, p.rows.len(), p.cur.at, height, func(i int) []string {
		e := p.events[p.rows.shown[i]]
		return []string{strconv.FormatUint(e.Sequence, 10), e.Scope, e.Source, e.Type, routedTo(e)}
	}), "\n")
}

// routedTo says where an Event went: the Work it joined or started, or
// why it reached none when the feed says so (an Event without a scope is
// never routed). The change feed carries no route decision, so an Event
// routed to no Work, or not yet routed, shows "-".
func routedTo(e protocol.Event) string {
	switch {
	case len(e.Works) > 0:
		return strings.Join(e.Works, ",")
	case e.Scope == "":
		return "not routed: no scope"
	}
	return "-"
}
