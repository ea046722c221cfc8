package pages

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Work is the Work pane: a list of Work newest first, a detail view of one
// (its attempts, its Wait and its inputs), and the cancel action with its
// confirmation.
type Work struct {
	c    *common.Common
	work []client.Work
	cur  cursor
	// detail is the Work shown in detail ("" for the list); loaded is its
	// detail once read.
	detail string
	loaded *client.WorkDetail
	// confirm is the Work a cancel waits to be confirmed for.
	confirm string
	status  string
}

// detailMsg is a Work's detail as read.
type detailMsg struct {
	id     string
	detail client.WorkDetail
	err    error
}

// cancelledMsg is the answer to a cancel.
type cancelledMsg struct {
	id   string
	work client.Work
	err  error
}

// NewWork returns the Work pane.
func NewWork(c *common.Common) *Work { return &Work{c: c} }

// Title implements Page.
func (p *Work) Title() string { return "Work" }

// Modal implements Page.
func (p *Work) Modal() bool { return p.confirm != "" }

// Status implements Page.
func (p *Work) Status() string {
	if p.confirm != "" {
		return p.c.Styles.Notice.Render("cancel Work " + p.confirm + "? y to cancel it, n to keep it")
	}
	return p.status
}

// Update implements Page.
func (p *Work) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.work = slices.Clone(msg.Work)
		// Newest first: IDs grow with time.
		slices.SortFunc(p.work, func(a, b client.Work) int { return strings.Compare(b.ID, a.ID) })
		p.cur.clamp(len(p.work))
		if p.detail != "" {
			return p.read(p.detail)
		}
	case detailMsg:
		if msg.id == p.detail {
			if msg.err != nil {
				p.status = p.c.Styles.Error.Render("reading Work " + msg.id + ": " + msg.err.Error())
			} else {
				p.loaded = &msg.detail
			}
		}
	case cancelledMsg:
		if msg.err != nil {
			p.status = p.c.Styles.Error.Render("cancel " + msg.id + ": " + msg.err.Error())
		} else {
			p.status = p.c.Styles.Notice.Render("Work " + msg.id + " is " + msg.work.State)
		}
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return nil
}

// key handles a key: the confirmation first, then the detail view's, then
// the list's.
func (p *Work) key(msg tea.KeyPressMsg) tea.Cmd {
	k := p.c.Keys
	switch {
	case p.confirm != "":
		id := p.confirm
		switch {
		case key.Matches(msg, k.Yes):
			p.confirm = ""
			p.status = "cancelling " + id + "…"
			return p.cancel(id)
		case key.Matches(msg, k.No):
			p.confirm = ""
			p.status = "kept Work " + id
		}
		return nil
	case key.Matches(msg, k.Cancel):
		w, ok := p.selectedWork()
		switch {
		case !ok:
		case !w.Open():
			// The daemon would refuse it as a conflict; say so without asking.
			p.status = "Work " + w.ID + " is " + w.State + "; only open Work can be cancelled"
		default:
			p.confirm, p.status = w.ID, ""
		}
	case p.detail != "" && key.Matches(msg, k.Back):
		p.detail, p.loaded = "", nil
	case p.detail == "" && key.Matches(msg, k.Enter):
		if id := p.selected(); id != "" {
			p.detail, p.loaded, p.status = id, nil, ""
			return p.read(id)
		}
	case p.detail == "":
		p.cur.moveKeys(p.c, msg, len(p.work))
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
	for _, w := range p.work {
		if w.ID == id {
			return w, true
		}
	}
	return client.Work{}, false
}

// selected is the Work under the cursor, or the one in detail.
func (p *Work) selected() string {
	if p.detail != "" {
		return p.detail
	}
	if p.cur.at < len(p.work) {
		return p.work[p.cur.at].ID
	}
	return ""
}

func (p *Work) read(id string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		d, err := c.API.WorkDetail(c.Ctx, id)
		return detailMsg{id: id, detail: d, err: err}
	}
}

func (p *Work) cancel(id string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		w, err := c.API.CancelWork(c.Ctx, id, "cancelled from the dashboard")
		return cancelledMsg{id: id, work: w, err: err}
	}
}

var workColumns = []common.Column{
	col("STATE", 9), col("KIND", 12), col("SCOPE", 10), col("AGE", 4), col("TITLE", 0),
}

// View implements Page.
func (p *Work) View(height int) string {
	if p.detail != "" {
		return p.viewDetail(height)
	}
	if len(p.work) == 0 {
		return "no Work"
	}
	now := p.c.Now()
	rows := make([][]string, len(p.work))
	for i, w := range p.work {
		rows[i] = []string{w.State, w.Kind, w.Scope, common.Ago(now, w.Created), w.Label()}
	}
	return strings.Join(table(p.c, workColumns, rows, p.cur.at, height), "\n")
}

// viewDetail renders one Work: its record, its attempts, its Wait and its
// latest inputs, cut to height.
func (p *Work) viewDetail(height int) string {
	w := p.c.Width
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, common.Fit(fmt.Sprintf(format, args...), w))
	}
	add("Work %s   (esc back, c cancel)", p.detail)
	d := p.loaded
	if d == nil {
		add("reading…")
		return strings.Join(lines, "\n")
	}
	now := p.c.Now()
	add("state %s  kind %s  scope %s  age %s", d.Work.State, d.Work.Kind, d.Work.Scope, common.Ago(now, d.Work.Created))
	add("title %s", d.Work.Label())
	if d.Work.Reason != "" {
		add("reason %s", d.Work.Reason)
	}
	lines = append(lines, p.c.Styles.Header.Render(common.Fit(fmt.Sprintf("Attempts (%d)", len(d.Executions)), w)))
	for _, e := range d.Executions {
		outcome := e.State
		if e.Outcome != "" {
			outcome = e.Outcome
		}
		exit := ""
		if e.ExitCode != nil {
			exit = " exit " + strconv.Itoa(*e.ExitCode)
		}
		add(" #%d %s/%s %s%s %s", e.Attempt, e.Package, e.Executor, outcome, exit, e.Reason)
	}
	if d.Wait != nil {
		lines = append(lines, p.c.Styles.Header.Render(common.Fit("Wait", w)))
		due := "no due time"
		if !d.Wait.Due.IsZero() {
			due = "due in " + common.Short(d.Wait.Due.Sub(now))
		}
		add(" %s (%s) %s", common.Dash(d.Wait.Description), due, d.Wait.Progress)
	}
	lines = append(lines, p.c.Styles.Header.Render(common.Fit(fmt.Sprintf("Inputs (%d)", d.Work.InputCount), w)))
	for _, in := range d.Inputs {
		add(" %d %s from %s (seq %d)", in.N, in.Event.Type, in.Event.Source, in.Event.Sequence)
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	return strings.Join(lines, "\n")
}
