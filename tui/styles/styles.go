// Package styles is the dashboard's look, apart from what it shows: one
// set with colour and one without, for a terminal that has none or an
// operator who set NO_COLOR.
package styles

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles are the dashboard's styles.
type Styles struct {
	// Tab and ActiveTab draw the pane names in the header.
	Tab       lipgloss.Style
	ActiveTab lipgloss.Style
	// Live and Disconnected draw the connection state.
	Live         lipgloss.Style
	Disconnected lipgloss.Style
	// Header draws a table's column names; Selected the row under the
	// cursor.
	Header   lipgloss.Style
	Selected lipgloss.Style
	// Error draws a failure (a last error, a refused cancel); Notice an
	// answer or a question.
	Error  lipgloss.Style
	Notice lipgloss.Style
	// Help styles the help bar.
	Help help.Styles
}

// New returns the styles: with colour unless color is false.
func New(color bool) *Styles {
	plain := lipgloss.NewStyle()
	if !color {
		// Without colour, the selection and the active tab still show, by
		// reverse video and a marker rather than a hue.
		return &Styles{
			Tab: plain, ActiveTab: plain.Reverse(true),
			Live: plain, Disconnected: plain.Reverse(true),
			Header: plain.Bold(true), Selected: plain.Reverse(true),
			Error: plain, Notice: plain,
			Help: help.Styles{
				ShortKey: plain, ShortDesc: plain, ShortSeparator: plain, Ellipsis: plain,
				FullKey: plain, FullDesc: plain, FullSeparator: plain,
			},
		}
	}
	return &Styles{
		Tab:          plain.Foreground(lipgloss.Color("245")),
		ActiveTab:    plain.Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("39")),
		Live:         plain.Foreground(lipgloss.Color("42")),
		Disconnected: plain.Bold(true).Foreground(lipgloss.Color("15")).Background(lipgloss.Color("160")),
		Header:       plain.Bold(true).Foreground(lipgloss.Color("39")),
		Selected:     plain.Reverse(true),
		Error:        plain.Foreground(lipgloss.Color("203")),
		Notice:       plain.Foreground(lipgloss.Color("220")),
		Help:         help.DefaultDarkStyles(),
	}
}
