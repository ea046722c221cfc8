package pages

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// workColumn is a column of the Work list: shown from a terminal width
// on, so 80 columns keep the telling ones readable and a wider terminal
// shows more.
type workColumn struct {
	col  common.Column
	from int
	cell func(w client.Work, now time.Time) string
}

var workColumns = []workColumn{
	{col("STATE", 9), 0, func(w client.Work, _ time.Time) string { return w.State }},
	{col("KIND", 12), 0, func(w client.Work, _ time.Time) string { return w.Kind }},
	{col("SCOPE", 10), 100, func(w client.Work, _ time.Time) string { return w.Scope }},
	{col("ATTEMPT", 14), 0, func(w client.Work, _ time.Time) string { return attemptOf(w) }},
	{col("REQUESTER", 14), 120, func(w client.Work, _ time.Time) string { return common.Dash(requesterOf(w)) }},
	{col("AGE", 4), 0, func(w client.Work, now time.Time) string { return common.Ago(now, w.Created) }},
	{col("TITLE", 0), 0, func(w client.Work, _ time.Time) string { return w.Label() }},
	{col("ID", 28), 160, func(w client.Work, _ time.Time) string { return w.ID }},
}

// attemptOf is the Work's latest attempt and its executor ("#2
// shell/sh"), or "-" before the first.
func attemptOf(w client.Work) string {
	if w.Attempt == 0 {
		return "-"
	}
	return strings.TrimSpace("#" + strconv.Itoa(w.Attempt) + " " + w.Executor)
}

func requesterOf(w client.Work) string {
	if w.Display == nil {
		return ""
	}
	return w.Display.Requester
}

// View implements Page.
func (p *Work) View(height int) string {
	if p.detail != "" {
		return p.viewDetail(height)
	}
	switch {
	case len(p.work) == 0:
		return "no Work"
	case p.rows.len() == 0:
		return "no Work matches " + p.filter.Query()
	}
	var cols []workColumn
	var table []common.Column
	for _, c := range workColumns {
		if p.c.Width >= c.from {
			cols = append(cols, c)
			table = append(table, c.col)
		}
	}
	note := p.olderNote()
	if note != "" {
		height--
	}
	now := p.c.Now()
	lines := windowTable(p.c, table, p.rows.len(), p.cur.at, height, func(i int) []string {
		w := p.work[p.rows.shown[i]]
		cells := make([]string, len(cols))
		for j, c := range cols {
			cells[j] = c.cell(w, now)
		}
		return cells
	})
	if note != "" {
		for len(lines) < height {
			lines = append(lines, "")
		}
		lines = append(lines, common.Fit(note, p.c.Width))
	}
	return strings.Join(lines, "\n")
}

// olderNote says under the list that older Work than the list holds
// exists, and how to see it ("" when the list holds the oldest).
func (p *Work) olderNote() string {
	switch {
	case !p.more:
		return ""
	case p.asked > p.pages:
		return "reading older Work…"
	case p.pages >= common.MaxWorkPages:
		return fmt.Sprintf("showing the newest %d Work; 'open-conduit work list' reads the older", len(p.work))
	}
	return fmt.Sprintf("%d newest Work held; ↓ past the last reads older", len(p.work))
}

// viewDetail renders one Work: its record, links, attempts, Wait,
// artifacts and latest inputs, scrolled to fit height.
func (p *Work) viewDetail(height int) string {
	w := p.c.Width
	head := common.Fit(fmt.Sprintf("Work %s   (esc back, ↑/↓ scroll)", p.detail), w)
	if p.loaded == nil {
		return head + "\n" + "reading…"
	}
	body := p.detailLines()
	rows := max(1, height-1)
	p.maxScroll = max(0, len(body)-rows)
	p.scroll = min(p.scroll, p.maxScroll)
	if p.maxScroll > 0 {
		last := min(len(body), p.scroll+rows)
		head = common.Fit(fmt.Sprintf("Work %s   lines %d-%d of %d (esc back, ↑/↓ scroll)", p.detail, p.scroll+1, last, len(body)), w)
	}
	body = body[p.scroll:min(len(body), p.scroll+rows)]
	return strings.Join(append([]string{head}, body...), "\n")
}

// detailLines are the detail's lines below its head, each fit to the
// width.
func (p *Work) detailLines() []string {
	w, s, d := p.c.Width, p.c.Styles, p.loaded
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, common.Fit(fmt.Sprintf(format, args...), w))
	}
	section := func(title string) { lines = append(lines, s.Header.Render(common.Fit(title, w))) }
	now := p.c.Now()
	add("state %s  kind %s  scope %s  age %s  attempt %s", d.Work.State, d.Work.Kind, d.Work.Scope, common.Ago(now, d.Work.Created), attemptOf(d.Work))
	add("title %s", d.Work.Label())
	if disp := d.Work.Display; disp != nil {
		if disp.Ref != "" && disp.Ref != d.Work.Label() {
			add("ref %s", disp.Ref)
		}
		add("requester %s", common.Dash(disp.Requester))
	} else {
		add("requester -")
	}
	if d.Work.Reason != "" {
		add("reason %s", d.Work.Reason)
	}
	if d.Work.Display != nil && len(d.Work.Display.Links) > 0 {
		section(fmt.Sprintf("Links (%d)", len(d.Work.Display.Links)))
		for _, l := range d.Work.Display.Links {
			add(" %s  %s", common.Dash(l.Label), l.URL)
		}
	}
	section(fmt.Sprintf("Attempts (%d)", len(d.Executions)))
	attempts := map[string]int{}
	for _, e := range d.Executions {
		attempts[e.ID] = e.Attempt
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
		section("Wait")
		due := "no due time"
		if !d.Wait.Due.IsZero() {
			due = "due in " + common.Short(d.Wait.Due.Sub(now))
		}
		add(" %s (%s) %s", common.Dash(d.Wait.Description), due, d.Wait.Progress)
	}
	p.artifactLines(attempts, section, add)
	section(fmt.Sprintf("Inputs (%d)", d.Work.InputCount))
	if d.Omitted > 0 {
		add(" … %d earlier not shown", d.Omitted)
	}
	for _, in := range d.Inputs {
		add(" %d %s from %s (seq %d)", in.N, in.Event.Type, in.Event.Source, in.Event.Sequence)
	}
	return lines
}

// artifactLines renders the Work's artifacts: name, media type, size and
// the attempt that made it, through the detail's section and add.
func (p *Work) artifactLines(attempts map[string]int, section func(string), add func(string, ...any)) {
	if p.artErr != "" {
		section("Artifacts")
		add(" could not be read: %s", p.artErr)
		return
	}
	section(fmt.Sprintf("Artifacts (%d)", len(p.arts)))
	for _, a := range p.arts {
		by := a.Execution
		if n, ok := attempts[a.Execution]; ok {
			by = "attempt #" + strconv.Itoa(n)
		}
		add(" %s  %s  %s  %s", a.Name, common.Dash(a.MediaType), bytesize(a.Size), common.Dash(by))
	}
}

// bytesize renders a size in bytes in its largest binary unit.
func bytesize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
