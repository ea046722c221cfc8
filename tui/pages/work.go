package pages

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Work is the Work pane: a list of Work newest first, read a page deeper
// as the cursor reaches its end; a detail view of one (its attempts, Wait,
// artifacts and inputs); and the actions on a Work (cancel, and interrupt,
// stop and inject for a running attempt), each confirmed first.
type Work struct {
	c    *common.Common
	work []client.Work
	// rows are the Work the filter lets through; the cursor moves over
	// them.
	rows   filtered
	filter common.Filter
	cur    cursor
	// pages is how many pages of Work the last read held, more whether
	// older Work follows them; asked is how deep the pane last asked for.
	pages, asked int
	more         bool
	// detail is the Work shown in detail ("" for the list); loaded is its
	// detail once read, arts its artifacts (artErr why they could not be
	// read); scroll is the first line shown and maxScroll its bound at
	// the last render.
	detail            string
	loaded            *client.WorkDetail
	arts              []client.Artifact
	artErr            string
	scroll, maxScroll int
	// ask is the action a y/n question waits on; prompt is an inject
	// whose line is being typed.
	ask    *action
	prompt *action
	status string
}

// action is one action on a Work: verb is "cancel" or a control
// (client.ControlInterrupt, ControlStop, ControlInject with its text).
type action struct {
	verb, id, text string
}

// detailMsg is a Work's detail and artifacts as read.
type detailMsg struct {
	id     string
	detail client.WorkDetail
	err    error
	arts   []client.Artifact
	artErr error
}

// cancelledMsg is the answer to a cancel.
type cancelledMsg struct {
	id   string
	work client.Work
	err  error
}

// controlledMsg is the daemon's answer to a control.
type controlledMsg struct {
	act action
	err error
}

// NewWork returns the Work pane.
func NewWork(c *common.Common) *Work { return &Work{c: c} }

// Title implements Page.
func (p *Work) Title() string { return "Work" }

// Modal implements Page: a question, an inject's line or a filter being
// typed holds the keys.
func (p *Work) Modal() bool { return p.ask != nil || p.prompt != nil || p.filter.Typing() }

// HelpKeys implements Page.
func (p *Work) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{brief(k.Cancel, "cancel"), brief(k.Interrupt, "interrupt"), brief(k.Stop, "stop"), brief(k.Inject, "inject"), k.Filter}
}

// Status implements Page.
func (p *Work) Status() string {
	switch {
	case p.ask != nil:
		return p.c.Styles.Notice.Render(p.ask.question())
	case p.prompt != nil && p.status != "":
		// Why enter did not send: the line is empty or too long.
		return p.status
	case p.prompt != nil:
		return "inject into Work " + p.prompt.id + ": " + p.prompt.text + "▏  (enter sends, esc drops)"
	case p.filter.Typing():
		return p.filter.Status()
	case p.status != "":
		return p.status
	}
	return p.filter.Status()
}

// Update implements Page.
func (p *Work) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.take(msg)
		if p.detail != "" {
			return p.read(p.detail)
		}
	case detailMsg:
		p.detailRead(msg)
	case cancelledMsg:
		if msg.err != nil {
			p.status = p.c.Styles.Error.Render("cancel " + msg.id + ": " + msg.err.Error())
		} else {
			p.status = p.c.Styles.Notice.Render("Work " + msg.id + " is " + msg.work.State)
		}
	case controlledMsg:
		p.status = msg.act.answer(p.c, msg.err)
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return nil
}

// take holds a new read of the Work, keeping the cursor on the Work it
// was on (unless it was on the newest, which it follows).
func (p *Work) take(s common.Snapshot) {
	was := ""
	if p.cur.at > 0 {
		was = p.selected()
	}
	p.work = s.Work
	// The daemon answers newest first (IDs grow with time); one that
	// does not yet is sorted here.
	newest := func(a, b client.Work) int { return strings.Compare(b.ID, a.ID) }
	if !slices.IsSortedFunc(p.work, newest) {
		p.work = slices.Clone(p.work)
		slices.SortFunc(p.work, newest)
	}
	p.pages, p.more = s.WorkPages, s.WorkMore
	work := p.work
	p.rows.set(len(work), func(i int) []string { return workFields(work[i]) }, &p.filter)
	if was != "" {
		for i, at := range p.rows.shown {
			if p.work[at].ID == was {
				p.cur.at = i
				break
			}
		}
	}
	p.cur.clamp(p.rows.len())
}

// workFields are what the filter looks in: state, kind, scope, title,
// ref, requester, executor and ID.
func workFields(w client.Work) []string {
	f := []string{w.State, w.Kind, w.Scope, w.Executor, w.ID}
	if d := w.Display; d != nil {
		f = append(f, d.Title, d.Ref, d.Requester)
	}
	return f
}

func (p *Work) detailRead(msg detailMsg) {
	if msg.id != p.detail {
		return
	}
	if msg.err != nil {
		p.status = p.c.Styles.Error.Render("reading Work " + msg.id + ": " + msg.err.Error())
		return
	}
	p.loaded, p.arts, p.artErr = &msg.detail, msg.arts, ""
	if msg.artErr != nil {
		p.artErr = msg.artErr.Error()
	}
}

// key handles a key: an open question or inject line first, then the
// filter being typed, the actions, the detail view's keys and the list's.
func (p *Work) key(msg tea.KeyPressMsg) tea.Cmd {
	k := p.c.Keys
	switch {
	case p.ask != nil:
		return p.answer(msg)
	case p.prompt != nil:
		p.typeLine(msg)
		return nil
	case p.detail == "" && p.filter.Key(k, msg):
		p.status = ""
		p.rows.refilter(&p.filter, false)
		p.cur.clamp(p.rows.len())
		return nil
	case key.Matches(msg, k.Cancel):
		p.offer("cancel")
	case key.Matches(msg, k.Interrupt):
		p.offer(client.ControlInterrupt)
	case key.Matches(msg, k.Stop):
		p.offer(client.ControlStop)
	case key.Matches(msg, k.Inject):
		p.offer(client.ControlInject)
	case p.detail != "":
		p.detailKey(msg)
	case key.Matches(msg, k.Enter):
		if id := p.selected(); id != "" {
			p.detail, p.loaded, p.arts, p.artErr, p.scroll, p.status = id, nil, nil, "", 0, ""
			return p.read(id)
		}
	default:
		if p.cur.moveKeys(p.c, msg, p.rows.len()) {
			return p.older()
		}
	}
	return nil
}

// detailKey scrolls the detail, or goes back to the list.
func (p *Work) detailKey(msg tea.KeyPressMsg) {
	k := p.c.Keys
	switch {
	case key.Matches(msg, k.Back):
		p.detail, p.loaded, p.arts = "", nil, nil
	case key.Matches(msg, k.Up):
		p.scroll = max(0, p.scroll-1)
	case key.Matches(msg, k.Down):
		p.scroll = min(p.maxScroll, p.scroll+1)
	}
}

// older asks for one more page of older Work when the cursor is on the
// oldest Work held and more follows, up to MaxWorkPages.
func (p *Work) older() tea.Cmd {
	if !p.more || p.cur.at < p.rows.len()-1 || p.asked > p.pages || p.pages >= common.MaxWorkPages {
		return nil
	}
	p.asked = p.pages + 1
	pages := p.asked
	return func() tea.Msg { return common.MoreWorkMsg{Pages: pages} }
}

// offer asks about an action on the selected Work, or says why it is not
// offered: cancel needs open Work, a control a running attempt.
func (p *Work) offer(verb string) {
	w, ok := p.selectedWork()
	switch {
	case !ok:
		return
	case verb == "cancel" && !w.Open():
		// The daemon would refuse it as a conflict; say so without asking.
		p.status = "Work " + w.ID + " is " + w.State + "; only open Work can be cancelled"
	case verb != "cancel" && w.State != client.WorkRunning:
		p.status = verb + " needs a running attempt; Work " + w.ID + " is " + w.State
	case verb == client.ControlInject:
		p.prompt, p.status = &action{verb: verb, id: w.ID}, ""
	default:
		p.ask, p.status = &action{verb: verb, id: w.ID}, ""
	}
}

// typeLine takes a key of the inject line: enter asks to send it, esc
// drops it.
func (p *Work) typeLine(msg tea.KeyPressMsg) {
	a := p.prompt
	switch msg.String() {
	case "enter":
		switch {
		case strings.TrimSpace(a.text) == "":
			p.status = "type the line to inject, or esc to drop it"
		case len(a.text) > client.MaxInjectText:
			p.status = p.c.Styles.Error.Render("the line is over the daemon's 64 KiB bound; shorten it")
		default:
			p.prompt, p.ask, p.status = nil, a, ""
		}
	case "esc":
		p.prompt, p.status = nil, "dropped the inject into Work "+a.id
	case "backspace":
		if r := []rune(a.text); len(r) > 0 {
			a.text = string(r[:len(r)-1])
		}
	case "ctrl+u":
		a.text = ""
	default:
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			a.text += msg.Text
			p.status = ""
		}
	}
}

// answer takes the answer to a question: y sends the action, n or esc
// keeps the Work as it is.
func (p *Work) answer(msg tea.KeyPressMsg) tea.Cmd {
	a := *p.ask
	switch {
	case key.Matches(msg, p.c.Keys.Yes):
		p.ask, p.status = nil, a.verb+" Work "+a.id+"…"
		if a.verb == "cancel" {
			return p.cancel(a.id)
		}
		return p.control(a)
	case key.Matches(msg, p.c.Keys.No):
		p.ask, p.status = nil, a.kept()
	}
	return nil
}

// selectedWork is the Work under the cursor, or the one in detail as
// last read.
func (p *Work) selectedWork() (client.Work, bool) {
	id := p.selected()
	if p.loaded != nil && p.loaded.Work.ID == id {
		return p.loaded.Work, true
	}
	if p.detail == "" && p.cur.at < p.rows.len() {
		return p.work[p.rows.shown[p.cur.at]], true
	}
	for _, w := range p.work {
		if w.ID == id {
			return w, true
		}
	}
	return client.Work{}, false
}

// selected is the ID of the Work under the cursor, or the one in detail.
func (p *Work) selected() string {
	if p.detail != "" {
		return p.detail
	}
	if p.cur.at < p.rows.len() {
		return p.work[p.rows.shown[p.cur.at]].ID
	}
	return ""
}

// read reads a Work's detail and its artifacts; artifacts that cannot be
// read leave the detail shown, with the reason in their place.
func (p *Work) read(id string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		d, err := c.API.WorkDetail(c.Ctx, id)
		if err != nil {
			return detailMsg{id: id, err: err}
		}
		arts, artErr := c.API.WorkArtifacts(c.Ctx, id)
		return detailMsg{id: id, detail: d, arts: arts.Artifacts, artErr: artErr}
	}
}

func (p *Work) cancel(id string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		w, err := c.API.CancelWork(c.Ctx, id, "cancelled from the dashboard")
		return cancelledMsg{id: id, work: w, err: err}
	}
}

func (p *Work) control(a action) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		_, err := c.API.ControlWork(c.Ctx, a.id, a.verb, a.text)
		return controlledMsg{act: a, err: err}
	}
}
