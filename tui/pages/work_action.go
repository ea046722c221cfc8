package pages

import (
	"errors"
	"strconv"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui/common"
)

// question is what the status line asks before the action is sent.
func (a action) question() string {
	switch a.verb {
	case "cancel":
		return "cancel Work " + a.id + "? y to cancel it, n to keep it"
	case client.ControlStop:
		return "stop Work " + a.id + "? y fails its attempt, n keeps it"
	case client.ControlInject:
		return "inject " + strconv.Quote(a.text) + " into Work " + a.id + "? y to send it, n to drop it"
	}
	return a.verb + " Work " + a.id + "? y to " + a.verb + " it, n to keep it"
}

// kept is what the status line says when the answer was no.
func (a action) kept() string {
	switch a.verb {
	case "cancel":
		return "kept Work " + a.id
	case client.ControlInject:
		return "dropped the inject into Work " + a.id
	}
	return "kept Work " + a.id + " running"
}

// answer is the daemon's answer to a control, for the status line. A
// refusal (the executor did not declare the control, the attempt ended
// meanwhile) is the daemon's words, which name the executor or the state,
// short enough for 80 columns.
func (a action) answer(c *common.Common, err error) string {
	var refused *client.Error
	switch {
	case errors.As(err, &refused):
		return c.Styles.Error.Render(a.verb + " refused: " + refused.Message)
	case err != nil:
		return c.Styles.Error.Render(a.verb + " Work " + a.id + ": " + err.Error())
	case a.verb == client.ControlStop:
		return c.Styles.Notice.Render("stopped Work " + a.id)
	case a.verb == client.ControlInject:
		return c.Styles.Notice.Render("injected " + strconv.Quote(a.text) + " into Work " + a.id)
	}
	return c.Styles.Notice.Render("sent " + a.verb + " to Work " + a.id)
}
