// Package tui is open-conduit tui: a live terminal dashboard of the
// daemon's packages, Work, Waits and Events. It is a client of the
// management API only. It follows the daemon's change feed (a long poll
// of GET /v1/changes) rather than polling on a timer, reads the panes'
// state again when the feed says something changed, and shows a
// "disconnected, retrying" state while the daemon does not answer.
package tui

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
	"github.com/open-conduit/open-conduit/tui/keymap"
	"github.com/open-conduit/open-conduit/tui/pages"
	"github.com/open-conduit/open-conduit/tui/styles"
)

// API is the part of the management API the dashboard reads.
type API = common.API

// TailEvents is how many of the latest Events the tail starts with.
const TailEvents = 100

// Options tune the dashboard; the zero value is the real one.
type Options struct {
	// Color draws in colour; Run sets it false when NO_COLOR is set or the
	// terminal is dumb.
	Color bool
	// Wait is how long one long poll may wait for a change (default 10 s):
	// the packages pane, which the feed does not cover, is read again at
	// least this often.
	Wait time.Duration
	// Retry is how long to wait before asking again after the daemon did
	// not answer (default 1 s).
	Retry time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Model is the dashboard's root model: the header of panes, the active
// pane and the help bar.
type Model struct {
	c     *common.Common
	opts  Options
	pages []pages.Page
	// active is the shown pane.
	active int
	help   help.Model
	// apply is the "apply the config file again" action, asked from any
	// pane.
	apply *pages.Apply
	// after and tick are the change feed's cursors; started says the
	// first answer came (and the tail was placed).
	after   uint64
	tick    uint64
	started bool
	// disconnected holds the last failure while the daemon does not
	// answer.
	disconnected string
	// reading says a snapshot read is in flight; dirty that something
	// changed since it began, so one more read follows it. A burst of
	// changes costs at most two reads, never a pile of them.
	reading, dirty bool
	// workPages is how many pages of Work a read goes deep: the Work
	// pane asks for more as its cursor reaches the oldest it holds.
	workPages int
}

type (
	changesMsg struct {
		ch  client.Changes
		err error
	}
	snapshotMsg struct {
		snap common.Snapshot
		err  error
	}
	retryMsg struct{}
	clockMsg struct{}
)

// New returns the dashboard over api; ctx ends its requests.
func New(ctx context.Context, api API, opts Options) *Model {
	if opts.Wait <= 0 {
		opts.Wait = 10 * time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &common.Common{
		Ctx: ctx, API: api, Width: 80, Height: 24,
		Styles: styles.New(opts.Color), Keys: keymap.Default(), Now: opts.Now,
	}
	h := help.New()
	h.Styles = c.Styles.Help
	h.SetWidth(c.Width)
	return &Model{
		c: c, opts: opts, help: h, apply: pages.NewApply(c), workPages: 1,
		pages: []pages.Page{pages.NewExtensions(c), pages.NewWork(c), pages.NewWaits(c), pages.NewEvents(c),
			pages.NewLogs(c, opts.Wait, opts.Retry), pages.NewWire(c, opts.Wait, opts.Retry)},
	}
}

// Run runs the dashboard on the terminal until the operator quits or ctx
// ends.
func Run(ctx context.Context, api API) error { return run(ctx, api) }

// RunWith is Run reading keys from in and drawing to out instead of the
// terminal, for a caller that has none (a test driving the whole
// command). With no terminal to ask, the size is 80×24.
func RunWith(ctx context.Context, api API, in io.Reader, out io.Writer) error {
	return run(ctx, api, tea.WithInput(in), tea.WithOutput(out), tea.WithWindowSize(80, 24))
}

func run(ctx context.Context, api API, opts ...tea.ProgramOption) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctx, api, Options{Color: colorWanted(os.Getenv)})
	_, err := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...).Run()
	return err
}

// colorWanted reports whether to draw in colour: not when NO_COLOR is set
// to a value, nor on a dumb terminal.
func colorWanted(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// Init implements tea.Model: the first read of the change feed, and the
// clock the countdowns run on.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.poll(), m.clock())
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.c.Width, m.c.Height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseWheelMsg:
		return m, m.wheel(msg)
	case changesMsg:
		return m, m.changes(msg)
	case snapshotMsg:
		return m, m.snapshotDone(msg)
	case common.MoreWorkMsg:
		if pages := min(msg.Pages, common.MaxWorkPages); pages > m.workPages {
			m.workPages = pages
			return m, m.snapshot()
		}
	case retryMsg:
		return m, m.poll()
	case clockMsg:
		return m, m.clock()
	case common.SwitchMsg:
		for i, p := range m.pages {
			if p.Title() == msg.Pane {
				m.active = i
			}
		}
		return m, m.broadcast(msg)
	case common.RefreshMsg:
		return m, m.snapshot()
	default:
		// A pane's own answers (a detail read, a cancel) go to every pane;
		// only the one that asked knows them.
		return m, tea.Batch(m.apply.Update(msg), m.broadcast(msg))
	}
	return m, nil
}

// key routes a key: a modal pane takes every key; else the dashboard's
// own keys, then the shown pane's.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.c.Keys
	page := m.pages[m.active]
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.apply.Modal() {
		return m.apply.Update(msg)
	}
	if page.Modal() {
		return page.Update(msg)
	}
	m.apply.Dismiss()
	switch {
	case key.Matches(msg, k.Apply):
		m.apply.Ask()
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, k.NextPane):
		m.active = (m.active + 1) % len(m.pages)
		return m.shown()
	case key.Matches(msg, k.PrevPane):
		m.active = (m.active + len(m.pages) - 1) % len(m.pages)
		return m.shown()
	default:
		return page.Update(msg)
	}
	return nil
}

// shown tells the pane just shown so, with the package under the
// Extensions pane's cursor: a pane that follows one package (Logs, Wire)
// and follows none yet starts with it.
func (m *Model) shown() tea.Cmd {
	msg := common.ShownMsg{}
	for _, p := range m.pages {
		if ext, ok := p.(*pages.Extensions); ok {
			msg.Package = ext.Selected()
		}
	}
	return m.pages[m.active].Update(msg)
}

// wheel scrolls the shown pane as its up and down keys do; a pane that
// holds the keys (a question, a filter being typed) ignores the wheel.
func (m *Model) wheel(msg tea.MouseWheelMsg) tea.Cmd {
	page := m.pages[m.active]
	if page.Modal() || m.apply.Modal() {
		return nil
	}
	switch msg.Mouse().Button {
	case tea.MouseWheelUp:
		return page.Update(tea.KeyPressMsg{Code: tea.KeyUp})
	case tea.MouseWheelDown:
		return page.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	}
	return nil
}

// changes takes a long poll's answer: on failure, show it and retry; else
// hand the Events on, read the panes again when something changed, and
// ask again.
func (m *Model) changes(msg changesMsg) tea.Cmd {
	if msg.err != nil {
		m.disconnected = msg.err.Error()
		return tea.Tick(m.opts.Retry, func(time.Time) tea.Msg { return retryMsg{} })
	}
	m.disconnected = ""
	ch := msg.ch
	first := !m.started
	m.started = true
	m.tick = ch.Tick
	if first && ch.Latest > ch.Next+TailEvents {
		// Start the tail at the latest Events, not the log's beginning.
		m.after = ch.Latest - TailEvents
		return tea.Batch(m.snapshot(), m.poll())
	}
	var cmds []tea.Cmd
	if len(ch.Events) > 0 {
		m.after = ch.Next
		cmds = append(cmds, m.broadcast(common.EventsMsg{Events: ch.Events, Routes: ch.Routes}))
	}
	// An answer with nothing in it is a poll that waited its time out:
	// read the panes then too, for the package states the feed does not
	// cover.
	if first || ch.Changed || len(ch.Events) == 0 {
		cmds = append(cmds, m.snapshot())
	}
	return tea.Batch(append(cmds, m.poll())...)
}

func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	cmds := make([]tea.Cmd, 0, len(m.pages))
	for _, p := range m.pages {
		cmds = append(cmds, p.Update(msg))
	}
	return tea.Batch(cmds...)
}

// poll asks the change feed for what happened after the cursors.
func (m *Model) poll() tea.Cmd {
	api, ctx := m.c.API, m.c.Ctx
	q := client.ChangesQuery{After: m.after, Tick: m.tick, Wait: m.opts.Wait}
	return func() tea.Msg {
		ch, err := api.Changes(ctx, q)
		return changesMsg{ch: ch, err: err}
	}
}

// snapshot reads what the Extensions, Work and Waits panes show, unless
// a read is in flight: then the one in flight is followed by one more.
func (m *Model) snapshot() tea.Cmd {
	if m.reading {
		m.dirty = true
		return nil
	}
	m.reading, m.dirty = true, false
	api, ctx, pages := m.c.API, m.c.Ctx, m.workPages
	return func() tea.Msg {
		s, err := readSnapshot(ctx, api, pages)
		return snapshotMsg{snap: s, err: err}
	}
}

// snapshotDone takes a read's answer to the panes, and starts the read
// that changes during it asked for.
func (m *Model) snapshotDone(msg snapshotMsg) tea.Cmd {
	m.reading = false
	var cmd tea.Cmd
	if msg.err != nil {
		m.disconnected = msg.err.Error()
	} else {
		cmd = m.broadcast(msg.snap)
	}
	if m.dirty {
		return tea.Batch(cmd, m.snapshot())
	}
	return cmd
}

// readSnapshot reads the packages, the Waits, and the Work newest first,
// pages pages deep (fewer when the Work ends sooner).
func readSnapshot(ctx context.Context, api API, pages int) (common.Snapshot, error) {
	var s common.Snapshot
	var err error
	if s.Extensions, err = api.Extensions(ctx); err != nil {
		return s, err
	}
	q := client.WorkQuery{Newest: true, Limit: client.MaxWorkPage}
	for s.WorkPages < pages {
		page, err := api.Works(ctx, q)
		if err != nil {
			return s, err
		}
		s.Work = append(s.Work, page.Work...)
		s.WorkPages++
		s.WorkMore = page.Next != ""
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	waits, err := api.Waits(ctx, client.WaitsQuery{Limit: client.MaxWaitsPage})
	if err != nil {
		return s, err
	}
	s.Waits = waits.Waits
	return s, nil
}

// clock redraws each second, so ages and countdowns move.
func (m *Model) clock() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return clockMsg{} })
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	// Cell motion reports the wheel; the terminal's own selection then
	// needs shift held, as in most full-screen programs.
	v.MouseMode = tea.MouseModeCellMotion
	return v
}

// Render is the dashboard as text: header, pane, status line and help,
// every line cut to the terminal's width.
func (m *Model) Render() string {
	w, s := m.c.Width, m.c.Styles
	var tabs []string
	for i, p := range m.pages {
		// Brackets mark the shown pane where reverse video cannot (a
		// capture of the screen's text).
		if i == m.active {
			tabs = append(tabs, s.ActiveTab.Render("["+p.Title()+"]"))
		} else {
			tabs = append(tabs, s.Tab.Render(" "+p.Title()+" "))
		}
	}
	state := s.Live.Render("live")
	switch {
	case m.disconnected != "":
		state = s.Disconnected.Render("disconnected, retrying")
	case !m.started:
		state = "connecting…"
	}
	header := strings.Join(tabs, "") + "  " + state
	footer := m.help.View(bar{m.c.Keys, m.pages[m.active].HelpKeys()})
	status := m.apply.Status()
	if status == "" {
		status = m.pages[m.active].Status()
	}
	if status == "" && m.disconnected != "" {
		status = s.Error.Render(m.disconnected)
	}
	height := max(1, m.c.Height-2-strings.Count(footer, "\n")-1)
	body := m.pages[m.active].View(height)
	lines := strings.Split(body, "\n")
	for len(lines) < height {
		lines = append(lines, "")
	}
	out := append([]string{header}, lines[:height]...)
	out = append(out, status)
	out = append(out, strings.Split(footer, "\n")...)
	for i, l := range out {
		out[i] = common.Cut(l, w)
	}
	return strings.Join(out, "\n")
}

// bar is the help bar's keys: the shown pane's own, then ? and q, then
// tab, so what the width drops from the end is the least needed; ? shows
// every key.
type bar struct {
	k    *keymap.KeyMap
	pane []key.Binding
}

// ShortHelp implements help.KeyMap.
func (b bar) ShortHelp() []key.Binding {
	return append(append(slices.Clip(b.pane), b.k.Help, b.k.Quit), b.k.NextPane)
}

// FullHelp implements help.KeyMap.
func (b bar) FullHelp() [][]key.Binding { return b.k.FullHelp() }
