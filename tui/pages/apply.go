package pages

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// Apply is the dashboard-wide "apply the config file again" action: a
// question, then the daemon's answer. It is no pane: the root model asks
// it from any pane and shows its line in the status line.
type Apply struct {
	c      *common.Common
	asking bool
	// answer is the last outcome, shown until the next key.
	answer string
}

// appliedMsg is the daemon's answer to a reload of its config file.
type appliedMsg struct {
	res client.Applied
	err error
}

// NewApply returns the action.
func NewApply(c *common.Common) *Apply { return &Apply{c: c} }

// Ask opens the question.
func (a *Apply) Ask() { a.asking, a.answer = true, "" }

// Modal reports that the question awaits an answer and holds the keys.
func (a *Apply) Modal() bool { return a.asking }

// Dismiss drops the last answer once the operator moved on.
func (a *Apply) Dismiss() {
	if !a.asking {
		a.answer = ""
	}
}

// Status is the question or the last answer ("" for none).
func (a *Apply) Status() string {
	if a.asking {
		return a.c.Styles.Notice.Render("apply the config file again? y to apply it, n to keep the live config")
	}
	return a.answer
}

// Update takes the answer to the question and the daemon's answer.
func (a *Apply) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !a.asking {
			return nil
		}
		switch {
		case key.Matches(msg, a.c.Keys.Yes):
			a.asking, a.answer = false, "applying the config file…"
			return a.reload()
		case key.Matches(msg, a.c.Keys.No):
			a.asking, a.answer = false, "kept the live config"
		}
	case appliedMsg:
		a.answer = a.outcome(msg)
		if msg.err == nil {
			// Packages may have been started or stopped: read them again.
			return func() tea.Msg { return common.RefreshMsg{} }
		}
	}
	return nil
}

func (a *Apply) reload() tea.Cmd {
	c := a.c
	return func() tea.Msg {
		res, err := c.API.ReloadConfig(c.Ctx)
		return appliedMsg{res: res, err: err}
	}
}

// outcome says what the reload did: applied with its generation,
// unchanged, or not applied with why.
func (a *Apply) outcome(msg appliedMsg) string {
	s, r := a.c.Styles, msg.res
	switch {
	case msg.err != nil:
		return s.Error.Render("apply: " + msg.err.Error())
	case r.Unchanged:
		gen := ""
		if r.Generation > 0 {
			gen = fmt.Sprintf("; generation %d stays", r.Generation)
		}
		return s.Notice.Render("config file unchanged" + gen)
	case r.Applied:
		return s.Notice.Render(fmt.Sprintf("config applied: generation %d", r.Generation))
	}
	var why []string
	if n := len(r.Problems); n > 0 {
		p := r.Problems[0]
		why = append(why, fmt.Sprintf("%d problem(s), first %s: %s", n, common.Dash(p.Path), p.Message))
	}
	for _, f := range r.Refused {
		why = append(why, fmt.Sprintf("refused by %s (%s): %s", f.Extension, f.Code, f.Message))
	}
	if len(why) == 0 {
		why = append(why, "the daemon gave no reason")
	}
	return s.Error.Render("config not applied: " + strings.Join(why, "; "))
}
