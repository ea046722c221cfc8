package pages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// MaxWireRows bounds the Wire pane's rows (entries and gaps); the
// daemon's tap itself holds the last 256 entries of a package.
const MaxWireRows = 1000

// Wire is the Wire pane: the live list of one package's JSON-RPC lines as
// the daemon's wire tap recorded them, and one line's whole message. It
// long-polls the tap, one read at a time; entries the tap dropped before
// they were read show as a gap row.
type Wire struct {
	c *common.Common
	// f follows the chosen package's tap; wait is how long one read waits
	// for a new entry.
	f    *follower[client.WirePage]
	wait time.Duration
	// rows are the entries read, in order, with the gaps between them;
	// after is the cursor of the next read.
	rows    []wireRow
	after   uint64
	started bool
	cur     cursor
	follow  bool
	filter  common.Filter
	// open is the entry shown whole (nil for the list); scroll is how far
	// down it is read.
	open   *client.WireEntry
	scroll scroller
}

// wireRow is an entry, or (entry nil) a gap of dropped entries.
type wireRow struct {
	entry   *client.WireEntry
	dropped uint64
	// restarted marks where the tap's numbering started over.
	restarted bool
}

// NewWire returns the Wire pane; a read waits up to wait for a new entry,
// and a failed read is tried again after retry.
func NewWire(c *common.Common, wait, retry time.Duration) *Wire {
	p := &Wire{c: c, wait: wait, follow: true}
	p.f = &follower[client.WirePage]{c: c, pane: p.Title(), what: "the wire tap", retry: retry,
		query: p.query, reset: p.reset, take: p.take}
	return p
}

// Title implements Page.
func (p *Wire) Title() string { return "Wire" }

// Modal implements Page.
func (p *Wire) Modal() bool { return p.filter.Typing() }

// HelpKeys implements Page.
func (p *Wire) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{packageKeys, brief(k.Enter, "whole line"), k.Filter}
}

// Status implements Page.
func (p *Wire) Status() string {
	if p.f.failed != "" && !p.filter.Typing() {
		return p.c.Styles.Error.Render(p.f.failed)
	}
	if p.open != nil {
		return ""
	}
	return p.filter.Status()
}

// Update implements Page.
func (p *Wire) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := p.f.update(msg); ok {
		return cmd
	}
	if msg, ok := msg.(tea.KeyPressMsg); ok {
		return p.key(msg)
	}
	return nil
}

func (p *Wire) key(msg tea.KeyPressMsg) tea.Cmd {
	k := p.c.Keys
	if p.open != nil {
		if key.Matches(msg, k.Back) {
			p.open = nil
		} else {
			p.scroll.key(p.c, msg)
		}
		return nil
	}
	if p.filter.Key(k, msg) {
		p.follow = true
		p.cur.at = len(p.shown()) - 1
		return nil
	}
	if cmd, ok := p.f.packageKey(msg); ok {
		return cmd
	}
	shown := p.shown()
	switch {
	case key.Matches(msg, k.Enter):
		if p.cur.at < len(shown) && shown[p.cur.at].entry != nil {
			p.open, p.scroll = shown[p.cur.at].entry, scroller{}
		}
	case p.cur.moveKeys(p.c, msg, len(shown)):
		p.follow = p.cur.at >= len(shown)-1
	}
	return nil
}

// reset drops what was read of the package followed before: its tap is
// read from the oldest entry it holds.
func (p *Wire) reset() {
	p.rows, p.after, p.started = nil, 0, false
	p.open, p.follow, p.cur = nil, true, cursor{}
}

// query is the next read of package name's tap, after the cursor.
func (p *Wire) query(name string) func(ctx context.Context) (client.WirePage, error) {
	api, q := p.c.API, client.WireQuery{After: p.after}
	if p.started {
		// Catching up answers at once; only a read at the end waits.
		q.Wait = p.wait
	}
	return func(ctx context.Context) (client.WirePage, error) { return api.Wire(ctx, name, q) }
}

// take keeps what a read brought.
func (p *Wire) take(pg client.WirePage) {
	if p.started && pg.Latest < p.after {
		// The daemon restarted and its tap numbers from 1 again: read it
		// from its start rather than wait past a cursor it never reaches.
		p.addRow(wireRow{restarted: true})
		p.after = 0
		return
	}
	if p.started && pg.Oldest > p.after+1 {
		p.addRow(wireRow{dropped: pg.Oldest - p.after - 1})
		// Counted once: the next read starts past the gap.
		p.after = pg.Oldest - 1
	}
	for i := range pg.Entries {
		e := pg.Entries[i]
		p.addRow(wireRow{entry: &e})
	}
	p.started = true
	if pg.Next > p.after {
		p.after = pg.Next
	}
	if p.follow {
		p.cur.at = len(p.shown()) - 1
	}
}

// addRow keeps a row, dropping the oldest beyond MaxWireRows.
func (p *Wire) addRow(r wireRow) {
	p.rows = append(p.rows, r)
	if over := len(p.rows) - MaxWireRows; over > 0 {
		p.rows = append([]wireRow(nil), p.rows[over:]...)
		if !p.follow {
			p.cur.at = max(0, p.cur.at-over)
		}
	}
}

// shown is the rows the filter (on the method) lets through; gaps always
// show, so a filtered list still says something was missed.
func (p *Wire) shown() []wireRow {
	if p.filter.Query() == "" {
		return p.rows
	}
	var out []wireRow
	for _, r := range p.rows {
		if r.entry == nil || p.filter.Match(r.entry.Method) {
			out = append(out, r)
		}
	}
	return out
}

// arrow draws a line's direction as seen from the host.
func arrow(direction string) string {
	switch direction {
	case client.WireToExtension:
		return "→ext"
	case client.WireFromExtension:
		return "←ext"
	}
	return direction
}

// latency renders an answer's time since its request.
func latency(micros int64) string {
	switch {
	case micros <= 0:
		return "-"
	case micros < 1000:
		return strconv.FormatInt(micros, 10) + "µs"
	case micros < 1_000_000:
		return strconv.FormatFloat(float64(micros)/1000, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(float64(micros)/1e6, 'f', 2, 64) + "s"
}

var wireColumns = []common.Column{
	col("TIME", 12), col("DIR", 4), col("KIND", 12), col("ID", 6), col("SIZE", 6), col("LATENCY", 8), col("METHOD", 0),
}

// View implements Page.
func (p *Wire) View(height int) string {
	w := p.c.Width
	if p.f.name == "" {
		return common.Fit("no package chosen: w on the Extensions pane shows its wire tap here; ←/→ choose one", w)
	}
	if p.open != nil {
		return p.viewEntry(height)
	}
	head := p.c.Styles.Header.Render(common.Fit("wire tap of "+p.f.name+"  (enter shows a line whole; ←/→ package)", w))
	shown := p.shown()
	switch {
	case !p.started:
		return head + "\n" + "reading…"
	case len(p.rows) == 0:
		return head + "\n" + "no JSON-RPC line yet; new ones show as they pass"
	case len(shown) == 0:
		return head + "\n" + "no line's method matches the filter " + strconv.Quote(p.filter.Query())
	}
	rows := make([][]string, len(shown))
	for i, r := range shown {
		switch {
		case r.restarted:
			rows[i] = []string{"⋯", "", "restart", "", "", "", "the daemon restarted; its tap started over"}
			continue
		case r.entry == nil:
			rows[i] = []string{"⋯", "", "gap", "", "", "", fmt.Sprintf("%d line(s) dropped", r.dropped)}
			continue
		}
		e := r.entry
		rows[i] = []string{e.Time.Local().Format("15:04:05.000"), arrow(e.Direction), e.Kind, common.Dash(e.ID),
			strconv.Itoa(e.Size), latency(e.LatencyMicros), common.Dash(e.Method)}
	}
	return head + "\n" + strings.Join(table(p.c, wireColumns, rows, p.cur.at, max(1, height-1)), "\n")
}

// viewEntry renders one line whole: its message indented when it is
// JSON, with a note when the tap cut it or hid a secret in it.
func (p *Wire) viewEntry(height int) string {
	w, e := p.c.Width, p.open
	head := p.c.Styles.Header.Render(common.Fit(fmt.Sprintf("%s %s %s id %s, %d bytes, %s  (esc back, ↑/↓ scroll)",
		arrow(e.Direction), e.Kind, common.Dash(e.Method), common.Dash(e.ID), e.Size, e.Time.Local().Format("15:04:05.000")), w))
	var lines []string
	if e.Cut {
		lines = append(lines, wrap("", p.c.Styles.Notice.Render(fmt.Sprintf("cut: the tap kept only the first %d of %d bytes", len(e.Message), e.Size)), w)...)
	}
	if e.Redacted {
		lines = append(lines, wrap("", p.c.Styles.Notice.Render("redacted: a secret's value was replaced"), w)...)
	}
	text := e.Message
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(e.Message), "", "  ") == nil {
		text = buf.String()
	}
	for _, l := range strings.Split(text, "\n") {
		lines = append(lines, wrap("", clean(l), w)...)
	}
	body := p.scroll.window(lines, max(1, height-1))
	return strings.Join(append([]string{head}, body...), "\n")
}
