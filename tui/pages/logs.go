package pages

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Bounds of the Logs pane: it starts at the log's last TailLines lines
// and keeps the last MaxLogLines, dropping older ones.
const (
	TailLines   = 200
	MaxLogLines = 5000
)

// Keys that choose the package a Logs or Wire pane follows: the next or
// the previous one in the daemon's list.
var (
	nextPackageKey = key.NewBinding(key.WithKeys("right", "]"), key.WithHelp("→/]", "next package"))
	prevPackageKey = key.NewBinding(key.WithKeys("left", "["), key.WithHelp("←/[", "previous package"))
	// packageKeys names both for the help bar.
	packageKeys = key.NewBinding(key.WithKeys("left", "right", "[", "]"), key.WithHelp("←/→", "package"))
)

// Logs is the Logs pane: the live tail of one package's stderr log. It
// reads the last lines, then long-polls for what the log gains, one read
// at a time. It follows the end unless the operator scrolled up.
type Logs struct {
	c *common.Common
	// f follows the chosen package's log; wait is how long one read
	// waits for the log to grow.
	f    *follower[client.Log]
	wait time.Duration
	// lines hold the log's last lines; first is the number of lines[0]
	// counted from the start of the tail.
	lines []string
	first int
	path  string
	// started says the first read answered; offset is where the next
	// read starts.
	started bool
	offset  int64
	// follow shows the end as lines come; else top is the number of the
	// first shown line. body is the height the lines were last drawn in.
	follow bool
	top    int
	body   int
	filter common.Filter
}

// NewLogs returns the Logs pane; a read waits up to wait for the log to
// grow, and a failed read is tried again after retry.
func NewLogs(c *common.Common, wait, retry time.Duration) *Logs {
	p := &Logs{c: c, wait: wait, follow: true}
	p.f = &follower[client.Log]{c: c, pane: p.Title(), what: "the log", retry: retry,
		query: p.query, reset: p.reset, take: p.take}
	return p
}

// Title implements Page.
func (p *Logs) Title() string { return "Logs" }

// Modal implements Page.
func (p *Logs) Modal() bool { return p.filter.Typing() }

// HelpKeys implements Page.
func (p *Logs) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{packageKeys, brief(k.Up, "scroll"), k.Filter}
}

// Status implements Page.
func (p *Logs) Status() string {
	if p.f.failed != "" && !p.filter.Typing() {
		return p.c.Styles.Error.Render(p.f.failed)
	}
	return p.filter.Status()
}

// Update implements Page.
func (p *Logs) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := p.f.update(msg); ok {
		return cmd
	}
	if msg, ok := msg.(tea.KeyPressMsg); ok {
		return p.key(msg)
	}
	return nil
}

func (p *Logs) key(msg tea.KeyPressMsg) tea.Cmd {
	if p.filter.Key(p.c.Keys, msg) {
		// The shown lines changed: start again at the end.
		p.follow = true
		return nil
	}
	if cmd, ok := p.f.packageKey(msg); ok {
		return cmd
	}
	p.scrollKey(msg)
	return nil
}

// reset drops what was read of the package followed before.
func (p *Logs) reset() {
	p.lines, p.first, p.path = nil, 0, ""
	p.started, p.offset = false, 0
	p.follow, p.top = true, 0
}

// query is the next read of package name: its last lines, or what it
// gained since the offset.
func (p *Logs) query(name string) func(ctx context.Context) (client.Log, error) {
	api, started, offset, wait := p.c.API, p.started, p.offset, p.wait
	return func(ctx context.Context) (client.Log, error) {
		if started {
			return api.LogsAfter(ctx, name, offset, wait)
		}
		return api.Logs(ctx, name, TailLines)
	}
}

// take keeps what a read brought.
func (p *Logs) take(l client.Log) {
	if l.Path != "" {
		p.path = l.Path
	}
	if p.started && l.Reset {
		p.add("── the log started over ──")
	}
	for _, line := range l.Lines {
		p.add(clean(line))
	}
	p.started, p.offset = true, l.Offset
}

// add keeps a line, dropping the oldest beyond MaxLogLines.
func (p *Logs) add(line string) {
	p.lines = append(p.lines, line)
	if over := len(p.lines) - MaxLogLines; over > 0 {
		p.lines = append([]string(nil), p.lines[over:]...)
		p.first += over
	}
}

// shown is the numbers of the lines the filter lets through.
func (p *Logs) shown() []int {
	out := make([]int, 0, len(p.lines))
	for i, l := range p.lines {
		if p.filter.Match(l) {
			out = append(out, p.first+i)
		}
	}
	return out
}

// scrollKey moves through the shown lines; reaching the end follows
// again.
func (p *Logs) scrollKey(msg tea.KeyPressMsg) {
	shown := p.shown()
	body := max(1, p.body)
	last := max(0, len(shown)-body)
	at := p.position(shown)
	switch {
	case key.Matches(msg, p.c.Keys.Up):
		at--
	case key.Matches(msg, p.c.Keys.Down):
		at++
	case key.Matches(msg, pageUpKey):
		at -= max(1, body-1)
	case key.Matches(msg, pageDownKey):
		at += max(1, body-1)
	case key.Matches(msg, homeKey):
		at = 0
	case key.Matches(msg, endKey):
		at = last
	default:
		return
	}
	at = max(0, min(at, last))
	p.follow = at >= last
	if len(shown) > 0 {
		p.top = shown[at]
	}
}

// position is the index in shown of the first line drawn.
func (p *Logs) position(shown []int) int {
	last := max(0, len(shown)-max(1, p.body))
	if p.follow {
		return last
	}
	for i, n := range shown {
		if n >= p.top {
			return min(i, last)
		}
	}
	return last
}

// View implements Page.
func (p *Logs) View(height int) string {
	w := p.c.Width
	if p.f.name == "" {
		return common.Fit("no package chosen: l on the Extensions pane shows its log here; ←/→ choose one", w)
	}
	p.body = max(1, height-1)
	shown := p.shown()
	at := p.position(shown)
	end := min(len(shown), at+p.body)
	where := "following"
	if !p.follow {
		where = fmt.Sprintf("scrolled up, %d line(s) below: end follows again", len(shown)-end)
	}
	head := fmt.Sprintf("log of %s (%s; ←/→ package)  %s", p.f.name, where, p.path)
	lines := []string{p.c.Styles.Header.Render(common.Fit(head, w))}
	switch {
	case !p.started:
		lines = append(lines, "reading…")
	case len(p.lines) == 0:
		lines = append(lines, "the log is empty; new lines show as they are written")
	case len(shown) == 0:
		lines = append(lines, "no line matches the filter "+strconv.Quote(p.filter.Query()))
	}
	for _, n := range shown[at:end] {
		lines = append(lines, common.Fit(p.lines[n-p.first], w))
	}
	return strings.Join(lines, "\n")
}
