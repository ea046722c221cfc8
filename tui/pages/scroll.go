package pages

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/open-conduit/open-conduit/tui/common"
)

// The keys that scroll a long text by a page or to an end. They are the
// scrolled views' own, beside the keymap's up and down.
var (
	pageUpKey   = key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up"))
	pageDownKey = key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdown", "page down"))
	homeKey     = key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "top"))
	endKey      = key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "bottom"))
)

// scroller is the first shown line of a text longer than its height. The
// height is the one the text was last drawn in, so a page key moves by
// what the operator saw. Scrolled to the end, it stays there as the text
// grows (a section read later).
type scroller struct {
	top, rows, height int
	atEnd             bool
}

// key scrolls for the up, down, page and end keys, and reports whether
// the key was one of them.
func (s *scroller) key(c *common.Common, msg tea.KeyPressMsg) bool {
	page := max(1, s.height-1)
	switch {
	case key.Matches(msg, c.Keys.Up):
		s.top--
	case key.Matches(msg, c.Keys.Down):
		s.top++
	case key.Matches(msg, pageUpKey):
		s.top -= page
	case key.Matches(msg, pageDownKey):
		s.top += page
	case key.Matches(msg, homeKey):
		s.top = 0
	case key.Matches(msg, endKey):
		s.top = s.rows
	default:
		return false
	}
	s.clamp()
	s.atEnd = s.rows > s.height && s.top >= s.rows-s.height
	return true
}

func (s *scroller) clamp() { s.top = max(0, min(s.top, s.rows-s.height)) }

// window keeps lines' shown part, height lines from the scrolled place.
func (s *scroller) window(lines []string, height int) []string {
	s.rows, s.height = len(lines), height
	if s.atEnd {
		s.top = s.rows
	}
	s.clamp()
	return lines[s.top:min(len(lines), s.top+height)]
}

// wrap breaks text into lines of width cells, the first after prefix and
// the rest indented as deep, so a long remedy or error is read whole.
func wrap(prefix, text string, width int) []string {
	indent := strings.Repeat(" ", ansi.StringWidth(prefix))
	body := max(8, width-ansi.StringWidth(prefix))
	var out []string
	for i, l := range strings.Split(ansi.Wrap(text, body, ""), "\n") {
		if i == 0 {
			out = append(out, prefix+l)
		} else {
			out = append(out, indent+l)
		}
	}
	return out
}

// clean makes a line a process wrote safe to draw: its escape sequences
// and control characters go, a tab becomes four spaces.
func clean(s string) string {
	s = strings.ReplaceAll(ansi.Strip(s), "\t", "    ")
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
