package pages

import (
	"cmp"
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
	// wait is how long one read waits for the log to grow; retry how
	// long to wait after a failed read.
	wait, retry time.Duration
	// names is the daemon's packages, for left and right.
	names []string
	// name is the package followed; gen counts the choices, so the answer
	// to a read for an earlier one is dropped.
	name string
	gen  int
	// lines hold the log's last lines; first is the number of lines[0]
	// counted from the start of the tail.
	lines []string
	first int
	path  string
	// started says the first read answered; offset is where the next
	// read starts.
	started bool
	offset  int64
	// inFlight says a read is out; stop ends it early when the package
	// changes.
	inFlight bool
	stop     context.CancelFunc
	// follow shows the end as lines come; else top is the number of the
	// first shown line. body is the height the lines were last drawn in.
	follow bool
	top    int
	body   int
	filter common.Filter
	// failed is why the last read failed, while it is retried.
	failed string
}

type (
	// logMsg is the answer to one read of a log.
	logMsg struct {
		gen int
		log client.Log
		err error
	}
	// logRetryMsg asks again after a failed read.
	logRetryMsg struct{ gen int }
)

// NewLogs returns the Logs pane; a read waits up to wait for the log to
// grow, and a failed read is tried again after retry.
func NewLogs(c *common.Common, wait, retry time.Duration) *Logs {
	return &Logs{c: c, wait: wait, retry: retry, follow: true}
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
	if p.failed != "" && !p.filter.Typing() {
		return p.c.Styles.Error.Render(p.failed)
	}
	return p.filter.Status()
}

// Update implements Page.
func (p *Logs) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.names = p.names[:0]
		for _, e := range msg.Extensions.Extensions {
			p.names = append(p.names, e.Name)
		}
	case common.ShownMsg:
		// Shown following no package yet: follow the one the Extensions
		// pane points at, else the first.
		if p.name == "" {
			return p.choose(cmp.Or(msg.Package, cycle(p.names, "", 0)))
		}
	case common.SwitchMsg:
		if msg.Pane == p.Title() && msg.Package != "" {
			return p.choose(msg.Package)
		}
	case logMsg:
		return p.answered(msg)
	case logRetryMsg:
		if msg.gen == p.gen && !p.inFlight {
			return p.read()
		}
	case tea.KeyPressMsg:
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
	switch {
	case key.Matches(msg, nextPackageKey):
		return p.choose(cycle(p.names, p.name, 1))
	case key.Matches(msg, prevPackageKey):
		return p.choose(cycle(p.names, p.name, -1))
	}
	p.scrollKey(msg)
	return nil
}

// cycle is the name step places from current in names (wrapping), the
// first when current is not among them.
func cycle(names []string, current string, step int) string {
	if len(names) == 0 {
		return current
	}
	for i, n := range names {
		if n == current {
			return names[(i+step+len(names))%len(names)]
		}
	}
	return names[0]
}

// choose follows package name from its last lines, dropping the lines of
// the one followed before; a read still out for that one is ended, and
// the new read starts when its answer comes.
func (p *Logs) choose(name string) tea.Cmd {
	if name == "" || name == p.name {
		return nil
	}
	p.gen++
	p.name, p.lines, p.first, p.path = name, nil, 0, ""
	p.started, p.offset, p.failed = false, 0, ""
	p.follow, p.top = true, 0
	if p.inFlight {
		p.stop()
		return nil
	}
	return p.read()
}

// read asks for the log's last lines, or what it gained since the offset.
func (p *Logs) read() tea.Cmd {
	api, gen, name := p.c.API, p.gen, p.name
	started, offset, wait := p.started, p.offset, p.wait
	ctx, stop := context.WithCancel(p.c.Ctx)
	p.inFlight, p.stop = true, stop
	return func() tea.Msg {
		defer stop()
		var l client.Log
		var err error
		if started {
			l, err = api.LogsAfter(ctx, name, offset, wait)
		} else {
			l, err = api.Logs(ctx, name, TailLines)
		}
		return logMsg{gen: gen, log: l, err: err}
	}
}

// answered takes a read's answer: an answer for an earlier choice only
// frees the way for the current one's read; a failure is said and tried
// again after the retry delay.
func (p *Logs) answered(msg logMsg) tea.Cmd {
	p.inFlight = false
	if msg.gen != p.gen {
		return p.read()
	}
	if msg.err != nil {
		if p.c.Ctx.Err() != nil {
			return nil
		}
		p.failed = fmt.Sprintf("reading the log of %s: %v; trying again in %s", p.name, msg.err, p.retry)
		gen := p.gen
		return tea.Tick(p.retry, func(time.Time) tea.Msg { return logRetryMsg{gen: gen} })
	}
	p.failed = ""
	l := msg.log
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
	return p.read()
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
	if p.name == "" {
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
	head := fmt.Sprintf("log of %s (%s; ←/→ package)  %s", p.name, where, p.path)
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
