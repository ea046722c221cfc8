package pages

import (
	"charm.land/bubbles/v2/key"
	"maps"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
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
	// routes is where each kept Event was routed so far, by ID; reading
	// says a read of the decisions still pending is in flight.
	routes  map[string]client.EventRoute
	reading bool
}

// routesMsg is the answer to a read of the route decisions.
type routesMsg struct {
	routes map[string]client.EventRoute
	err    error
}

// NewEvents returns the Events pane.
func NewEvents(c *common.Common) *Events {
	return &Events{c: c, follow: true, routes: map[string]client.EventRoute{}}
}

// Title implements Page.
func (p *Events) Title() string { return "Events" }

// Modal implements Page: a filter being typed holds the keys.
func (p *Events) Modal() bool { return p.filter.Typing() }

// HelpKeys implements Page.
func (p *Events) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{k.Down, k.Filter}
}

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
			p.pruneRoutes()
		}
		maps.Copy(p.routes, msg.Routes)
		p.refresh(was)
	case common.Snapshot:
		// Something changed: a decision pending when the Event was listed
		// may have been made since. One read asks for all of them.
		return p.readRoutes()
	case routesMsg:
		p.reading = false
		if msg.err == nil {
			maps.Copy(p.routes, msg.routes)
			p.refresh(p.cursorSeq())
		}
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
		return []string{strconv.FormatUint(e.Sequence, 10), e.Scope, e.Source, e.Type, p.routedTo(e)}
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
		return []string{strconv.FormatUint(e.Sequence, 10), e.Scope, e.Source, e.Type, p.routedTo(e)}
	}), "\n")
}

// pending reports that the router has not decided where e goes, as far
// as the pane knows.
func (p *Events) pending(e protocol.Event) bool {
	if e.Scope == "" || len(e.Works) > 0 {
		return false
	}
	r, ok := p.routes[e.ID]
	return !ok || r.State == client.RoutePending
}

// readRoutes reads the route decisions from the oldest kept Event still
// pending onward, in one request; nothing when none is pending or a read
// is already out.
func (p *Events) readRoutes() tea.Cmd {
	if p.reading {
		return nil
	}
	first := -1
	for i, e := range p.events {
		if p.pending(e) {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	p.reading = true
	c := p.c
	q := client.EventsQuery{After: p.events[first].Sequence - 1, Limit: len(p.events) - first}
	return func() tea.Msg {
		evs, err := c.API.Events(c.Ctx, q)
		return routesMsg{routes: evs.Routes, err: err}
	}
}

// pruneRoutes forgets the decisions of Events that scrolled away.
func (p *Events) pruneRoutes() {
	kept := make(map[string]bool, len(p.events))
	for _, e := range p.events {
		kept[e.ID] = true
	}
	maps.DeleteFunc(p.routes, func(id string, _ client.EventRoute) bool { return !kept[id] })
}

// routedTo says where an Event went: the Work the router sent it to (new
// when it started one), that no route matched or routing failed, that the
// decision is still pending, or that an Event without a scope is never
// routed.
func (p *Events) routedTo(e protocol.Event) string {
	r, ok := p.routes[e.ID]
	switch {
	case e.Scope == "":
		return "not routed: no scope"
	case ok && r.State == client.RouteRouted && r.Work != "" && r.Created:
		return r.Work + " (new)"
	case ok && r.State == client.RouteRouted && r.Work != "":
		return r.Work
	case ok && r.State == client.RouteUnmatched:
		return "no route matched"
	case ok && r.State == client.RouteFailed:
		return "routing failed"
	case len(e.Works) > 0:
		return strings.Join(e.Works, ",")
	case ok && r.State == client.RouteRouted:
		return "routed"
	}
	return "routing…"
}
