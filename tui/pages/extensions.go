package pages

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// RestartWait is how long a restart's answer waits for the new process's
// handshake, so the status line can say how the restart ended.
const RestartWait = 10 * time.Second

// Widths from which the packages table shows more: the uptime and the
// count of permissions, then the permissions themselves.
const (
	wideExtensions  = 120
	widerExtensions = 180
)

// Extensions is the packages pane: one row per package, with its state,
// process and last error; a detail view of one (everything the daemon
// says of it, and its doctor checks); the restart action with its
// confirmation; and the way to its log and its wire tap.
type Extensions struct {
	c      *common.Common
	exts   []client.Extension
	cur    cursor
	filter common.Filter
	// detail is the package shown in detail ("" for the list); scroll is
	// how far down it is read.
	detail string
	scroll scroller
	// checks are the doctor checks of the package in detail, once read
	// (checksErr when the read failed).
	checks    []client.Check
	checksFor string
	checksErr string
	// confirm is the package a restart waits to be confirmed for.
	confirm string
	status  string
}

// doctorMsg is the doctor's answer, read for the package in detail.
type doctorMsg struct {
	name   string
	doctor client.Doctor
	err    error
}

// restartedMsg is the answer to a restart.
type restartedMsg struct {
	name string
	res  client.RestartResult
	err  error
}

// NewExtensions returns the Extensions pane.
func NewExtensions(c *common.Common) *Extensions { return &Extensions{c: c} }

// Title implements Page.
func (p *Extensions) Title() string { return "Extensions" }

// Modal implements Page.
func (p *Extensions) Modal() bool { return p.confirm != "" || p.filter.Typing() }

// HelpKeys implements Page.
func (p *Extensions) HelpKeys() []key.Binding {
	k := p.c.Keys
	return []key.Binding{brief(k.Enter, "detail"), brief(k.Restart, "restart"), brief(k.Logs, "log"), brief(k.Wire, "wire"), k.Filter}
}

// Status implements Page.
func (p *Extensions) Status() string {
	switch {
	case p.confirm != "":
		return p.c.Styles.Notice.Render("restart package " + p.confirm + "? y to restart it, n to keep it running")
	case p.filter.Typing():
		return p.filter.Status()
	case p.status != "":
		return p.status
	case p.detail == "":
		return p.filter.Status()
	}
	return ""
}

// Update implements Page.
func (p *Extensions) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Snapshot:
		p.exts = msg.Extensions.Extensions
		p.cur.clamp(len(p.shown()))
	case doctorMsg:
		if msg.name == p.detail {
			p.checksFor, p.checks, p.checksErr = msg.name, nil, ""
			if msg.err != nil {
				p.checksErr = msg.err.Error()
			} else {
				p.checks = checksOf(msg.name, msg.doctor.Checks, p.names())
			}
		}
	case restartedMsg:
		p.status = p.restarted(msg)
		return func() tea.Msg { return common.RefreshMsg{} }
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return nil
}

// key handles a key: the confirmation first, then the filter being
// typed, then the actions, then the detail's or the list's movement.
func (p *Extensions) key(msg tea.KeyPressMsg) tea.Cmd {
	k := p.c.Keys
	if p.confirm != "" {
		name := p.confirm
		switch {
		case key.Matches(msg, k.Yes):
			p.confirm, p.status = "", "restarting "+name+"…"
			return p.restart(name)
		case key.Matches(msg, k.No):
			p.confirm, p.status = "", "kept "+name+" running"
		}
		return nil
	}
	if p.detail == "" && p.filter.Key(k, msg) {
		p.cur.clamp(len(p.shown()))
		return nil
	}
	name := p.Selected()
	switch {
	case key.Matches(msg, k.Restart):
		if name != "" {
			p.confirm, p.status = name, ""
		}
	case key.Matches(msg, k.Logs):
		return switchTo("Logs", name)
	case key.Matches(msg, k.Wire):
		return switchTo("Wire", name)
	case p.detail != "" && key.Matches(msg, k.Back):
		p.detail = ""
	case p.detail != "":
		p.scroll.key(p.c, msg)
	case key.Matches(msg, k.Enter):
		if name != "" {
			p.detail, p.scroll, p.status = name, scroller{}, ""
			p.checks, p.checksFor, p.checksErr = nil, "", ""
			return p.readDoctor(name)
		}
	default:
		p.cur.moveKeys(p.c, msg, len(p.shown()))
	}
	return nil
}

// switchTo asks the root model to show a pane following package name.
func switchTo(pane, name string) tea.Cmd {
	if name == "" {
		return nil
	}
	return func() tea.Msg { return common.SwitchMsg{Pane: pane, Package: name} }
}

// shown is the packages the filter lets through, in the daemon's order.
func (p *Extensions) shown() []client.Extension {
	var out []client.Extension
	for _, e := range p.exts {
		if p.filter.Match(e.Name, e.State, e.Source, e.Code, e.LastError) {
			out = append(out, e)
		}
	}
	return out
}

func (p *Extensions) names() []string {
	out := make([]string, len(p.exts))
	for i, e := range p.exts {
		out[i] = e.Name
	}
	return out
}

// selected is the package in detail, or the one under the cursor.
// Selected is the package under the cursor, or the one in detail ("" for
// none).
func (p *Extensions) Selected() string {
	if p.detail != "" {
		return p.detail
	}
	if shown := p.shown(); p.cur.at < len(shown) {
		return shown[p.cur.at].Name
	}
	return ""
}

func (p *Extensions) readDoctor(name string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		d, err := c.API.Doctor(c.Ctx)
		return doctorMsg{name: name, doctor: d, err: err}
	}
}

func (p *Extensions) restart(name string) tea.Cmd {
	c := p.c
	return func() tea.Msg {
		res, err := c.API.Restart(c.Ctx, name, RestartWait)
		return restartedMsg{name: name, res: res, err: err}
	}
}

// restarted says how a restart ended: running again, failed with the
// code of why, or still starting when the wait ran out.
func (p *Extensions) restarted(msg restartedMsg) string {
	s, e := p.c.Styles, msg.res.Extension
	switch {
	case msg.err != nil:
		return s.Error.Render("restart " + msg.name + ": " + msg.err.Error())
	case !msg.res.Done:
		return s.Notice.Render(fmt.Sprintf("%s is restarting (%s); the list shows when it is up", msg.name, common.Dash(e.State)))
	case e.State == "running":
		return s.Notice.Render(fmt.Sprintf("%s restarted: running, pid %d", msg.name, e.PID))
	}
	return s.Error.Render(fmt.Sprintf("%s restarted but is %s: %s", msg.name, e.State, lastError(e)))
}

// checksOf is the doctor checks that concern package name: its own
// health ("extension NAME") and the checks it declares, which doctor
// names NAME, NAME_CHECK or NAME-CHECK. A name that could be two
// packages' (a_b_c of a and of a_b) is the longer name's.
func checksOf(name string, checks []client.Check, names []string) []client.Check {
	var out []client.Check
	for _, c := range checks {
		if checkOwner(c.Name, names) == name {
			out = append(out, c)
		}
	}
	return out
}

// checkOwner is the package a doctor check is about, "" for the daemon's
// own checks.
func checkOwner(check string, names []string) string {
	if pkg, ok := strings.CutPrefix(check, "extension "); ok {
		return pkg
	}
	owner := ""
	for _, n := range names {
		if (check == n || strings.HasPrefix(check, n+"_") || strings.HasPrefix(check, n+"-")) && len(n) > len(owner) {
			owner = n
		}
	}
	return owner
}

// lastError is the package's last error, prefixed with its code when the
// text does not already carry it.
func lastError(e client.Extension) string {
	s := e.LastError
	if e.Code != "" && !strings.Contains(s, e.Code) {
		s = strings.TrimSpace(e.Code + " " + s)
	}
	return common.Dash(s)
}

// uptime is how long the package's process has run, "-" when none does.
func uptime(now time.Time, e client.Extension) string {
	if e.PID == 0 || e.Started.IsZero() {
		return "-"
	}
	return common.Ago(now, e.Started)
}

// View implements Page.
func (p *Extensions) View(height int) string {
	if p.detail != "" {
		return p.viewDetail(height)
	}
	if len(p.exts) == 0 {
		return "no packages"
	}
	shown := p.shown()
	if len(shown) == 0 {
		return "no package matches the filter " + strconv.Quote(p.filter.Query())
	}
	w, now := p.c.Width, p.c.Now()
	cols := []common.Column{
		col("NAME", 14), col("VERSION", 8), col("SOURCE", 9), col("STATE", 10), col("PID", 7),
		col("RST", 3), col("PROTO", 5),
	}
	switch {
	case w >= widerExtensions:
		cols = append(cols, col("UPTIME", 6), col("PERMISSIONS", 30))
	case w >= wideExtensions:
		cols = append(cols, col("UPTIME", 6), col("PERMS", 5))
	}
	cols = append(cols, col("LAST ERROR", 0))
	rows := make([][]string, len(shown))
	for i, e := range shown {
		pid, proto := "-", "-"
		if e.PID > 0 {
			pid = strconv.Itoa(e.PID)
		}
		if e.Protocol > 0 {
			proto = strconv.Itoa(e.Protocol)
		}
		row := []string{e.Name, common.Dash(e.Version), e.Source, e.State, pid, strconv.Itoa(e.Restarts), proto}
		switch {
		case w >= widerExtensions:
			row = append(row, uptime(now, e), common.Dash(strings.Join(e.Permissions, ",")))
		case w >= wideExtensions:
			row = append(row, uptime(now, e), strconv.Itoa(len(e.Permissions)))
		}
		rows[i] = append(row, lastError(e))
	}
	return strings.Join(table(p.c, cols, rows, p.cur.at, height), "\n")
}

// viewDetail renders the package in detail, scrolled to fit height.
func (p *Extensions) viewDetail(height int) string {
	w := p.c.Width
	head := common.Fit("Package "+p.detail+"   (esc back, r restart, l log, w wire, ↑/↓ scroll)", w)
	var e *client.Extension
	for i := range p.exts {
		if p.exts[i].Name == p.detail {
			e = &p.exts[i]
		}
	}
	if e == nil {
		return head + "\n" + common.Fit("the daemon no longer lists "+p.detail, w)
	}
	lines := p.detailLines(*e)
	body := p.scroll.window(lines, max(1, height-1))
	if p.scroll.rows > len(body) {
		head = common.Fit(fmt.Sprintf("Package %s   (esc back, r restart, l log, w wire; lines %d-%d of %d)",
			p.detail, p.scroll.top+1, p.scroll.top+len(body), p.scroll.rows), w)
	}
	return strings.Join(append([]string{head}, body...), "\n")
}

// detailLines is everything the detail shows of e, each line at most the
// width: long texts wrap rather than lose their end.
func (p *Extensions) detailLines(e client.Extension) []string {
	w, s, now := p.c.Width, p.c.Styles, p.c.Now()
	var lines []string
	add := func(prefix, text string) { lines = append(lines, wrap(prefix, text, w)...) }
	section := func(title string) { lines = append(lines, s.Header.Render(common.Fit(title, w))) }

	add("title    ", common.Dash(e.Title))
	add("version  ", fmt.Sprintf("%s   source %s", common.Dash(e.Version), e.Source))
	add("dir      ", common.Dash(e.Dir))
	state := e.State
	if e.Code != "" {
		state += " (" + e.Code + ")"
	}
	add("state    ", state)
	if e.LastError != "" {
		add("error    ", e.LastError)
	}
	if e.Remedy != "" {
		add("remedy   ", e.Remedy)
	}
	pid, proto, next := "-", "-", "-"
	if e.PID > 0 {
		pid = strconv.Itoa(e.PID)
	}
	if e.Protocol > 0 {
		proto = strconv.Itoa(e.Protocol)
	}
	if !e.NextRestart.IsZero() {
		next = "in " + common.Short(e.NextRestart.Sub(now))
	}
	add("process  ", fmt.Sprintf("pid %s  uptime %s  restarts %d  next restart %s  protocol %s",
		pid, uptime(now, e), e.Restarts, next, proto))
	if e.Pending != "" {
		add("pending  ", e.Pending)
	}
	add("refused  ", fmt.Sprintf("%d call(s)", e.Refused))
	add("log      ", common.Dash(e.Log))

	section(fmt.Sprintf("Permissions (%d)", len(e.Permissions)))
	if len(e.Permissions) > 0 {
		add(" ", strings.Join(e.Permissions, ", "))
	}
	// Names only: the daemon never says a variable's value, nor does this.
	section("Environment")
	add(" granted  ", common.Dash(strings.Join(e.GrantedEnv, ", ")))
	add(" missing  ", common.Dash(strings.Join(e.MissingEnv, ", ")))

	section(fmt.Sprintf("Tasks (%d)", len(e.Tasks)))
	for _, t := range e.Tasks {
		text := fmt.Sprintf("every %s, %d run(s), last %s", common.Short(time.Duration(t.Every)*time.Second), t.Runs, lastRun(now, t.LastRun))
		if t.LastErr != "" {
			text += "; last error: " + t.LastErr
		}
		add(" "+t.Name+"  ", text)
	}

	section("Surfaces")
	if len(e.Surfaces) == 0 {
		add(" ", "none declared")
	}
	for _, sf := range e.Surfaces {
		add(" ", sf)
	}

	switch {
	case p.checksFor != e.Name && p.checksErr == "":
		section("Doctor checks")
		add(" ", "reading…")
	case p.checksErr != "":
		section("Doctor checks")
		lines = append(lines, wrap(" ", s.Error.Render("reading the doctor: "+p.checksErr), w)...)
	default:
		section(fmt.Sprintf("Doctor checks (%d)", len(p.checks)))
		for _, c := range p.checks {
			status := fmt.Sprintf(" %-4s ", c.Status)
			if c.Status == "fail" || c.Status == "warn" {
				status = s.Error.Render(status)
			}
			detail := c.Name + ": " + c.Detail
			if c.Code != "" {
				detail += " (" + c.Code + ")"
			}
			add(status, detail)
			if c.Remedy != "" {
				add("      remedy ", c.Remedy)
			}
		}
	}
	return lines
}

// lastRun says when a task last ran, "never" before its first run.
func lastRun(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return common.Ago(now, t) + " ago"
}
