package common

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/tui/keymap"
)

// Filter is a list's "/" filter. While the operator types it holds the
// keys (the pane is modal); enter keeps what was typed, esc while typing
// drops it. A kept filter narrows the list to rows matching every word
// of it, ignoring case, until it is cleared with "/" then esc.
type Filter struct {
	typing bool
	query  string
}

// Typing reports that the filter is being typed and holds the keys.
func (f *Filter) Typing() bool { return f.typing }

// Query is the filter as typed ("" for none).
func (f *Filter) Query() string { return f.query }

// Clear drops the filter.
func (f *Filter) Clear() { f.typing, f.query = false, "" }

// Key takes a key: "/" starts typing; while typing, printable keys add
// to the filter, backspace takes one back, ctrl+u clears it, enter keeps
// it and esc drops it. It reports whether the key was the filter's.
func (f *Filter) Key(keys *keymap.KeyMap, msg tea.KeyPressMsg) bool {
	if !f.typing {
		if key.Matches(msg, keys.Filter) {
			f.typing = true
			return true
		}
		return false
	}
	switch msg.String() {
	case "enter":
		f.typing = false
	case "esc":
		f.Clear()
	case "backspace":
		if r := []rune(f.query); len(r) > 0 {
			f.query = string(r[:len(r)-1])
		}
	case "ctrl+u":
		f.query = ""
	default:
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			f.query += msg.Text
		}
	}
	return true
}

// Match reports whether a row with these fields passes the filter: each
// word of the filter is found, ignoring case, in one of the fields.
func (f *Filter) Match(fields ...string) bool {
	for _, word := range strings.Fields(strings.ToLower(f.query)) {
		found := false
		for _, field := range fields {
			if strings.Contains(strings.ToLower(field), word) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Status is the line the filter wants above the help bar: the filter as
// it is typed, or the kept filter and how to clear it; "" with none.
func (f *Filter) Status() string {
	switch {
	case f.typing:
		return "/" + f.query + "▏  (enter keeps, esc drops)"
	case f.query != "":
		return "filter: " + f.query + "  (/ then esc clears)"
	}
	return ""
}
