// Package common is what every pane of the dashboard shares: the
// management API it reads, the terminal's size, the styles and the keymap,
// and the messages that carry what the daemon said to the panes.
package common

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/tui/keymap"
	"github.com/open-conduit/open-conduit/tui/styles"
)

// API is the part of the management API the dashboard uses; *client.Client
// implements it, and a test may fake it.
type API interface {
	Extensions(ctx context.Context) (client.Extensions, error)
	Works(ctx context.Context, q client.WorkQuery) (client.WorkList, error)
	WorkDetail(ctx context.Context, id string) (client.WorkDetail, error)
	Waits(ctx context.Context, q client.WaitsQuery) (client.Waits, error)
	Changes(ctx context.Context, q client.ChangesQuery) (client.Changes, error)
	// Events reads a page of the event log with each Event's route so far.
	Events(ctx context.Context, q client.EventsQuery) (client.Events, error)
	CancelWork(ctx context.Context, id, reason string) (client.Work, error)
	// ControlWork sends a control (interrupt, inject, stop) to the Work's
	// running execution; text is the line an inject writes.
	ControlWork(ctx context.Context, work, control, text string) (client.ControlResult, error)
	WorkArtifacts(ctx context.Context, work string) (client.Artifacts, error)
	// Logs reads the last tail lines of a package's stderr log; LogsAfter
	// reads on from an offset, waiting up to wait for more.
	Logs(ctx context.Context, extension string, tail int) (client.Log, error)
	LogsAfter(ctx context.Context, extension string, offset int64, wait time.Duration) (client.Log, error)
	// Wire reads a package's wire tap: its recent JSON-RPC messages.
	Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error)
	Restart(ctx context.Context, extension string, wait time.Duration) (client.RestartResult, error)
	// ReloadConfig reads the daemon's config file again and applies it.
	ReloadConfig(ctx context.Context) (client.Applied, error)
	Doctor(ctx context.Context, opts ...client.DoctorOptions) (client.Doctor, error)
}

// Common is the state the panes share. The root model owns it; panes read
// it and call the API through it.
type Common struct {
	// Ctx ends when the dashboard quits, so a long poll in flight ends too.
	Ctx    context.Context
	API    API
	Width  int
	Height int
	Styles *styles.Styles
	Keys   *keymap.KeyMap
	// Now is the clock ages and countdowns are read against.
	Now func() time.Time
}

// Snapshot is the daemon's state as the last reads saw it: what the
// Extensions, Work and Waits panes show.
type Snapshot struct {
	Extensions client.Extensions
	// Work is newest first, WorkPages pages of it; WorkMore says older
	// Work follows the last one read.
	Work      []client.Work
	WorkPages int
	WorkMore  bool
	Waits     []client.Wait
}

// MaxWorkPages bounds how deep the dashboard reads Work: 20 pages of
// client.MaxWorkPage, the newest 20,000, so memory and each read stay
// bounded however much Work the daemon keeps.
const MaxWorkPages = 20

// MoreWorkMsg asks for Work Pages pages deep, from the next read on: the
// Work pane's cursor reached the oldest Work it holds.
type MoreWorkMsg struct{ Pages int }

// EventsMsg carries the Events a long poll brought, in sequence order,
// and where each in a scope was routed so far, by ID.
type EventsMsg struct {
	Events []protocol.Event
	Routes map[string]client.EventRoute
}

// Fit cuts s to width cells (with an ellipsis) and pads it to exactly
// width, so columns line up and no line runs past the terminal.
func Fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = strings.ReplaceAll(s, "\n", " ")
	s = ansi.Truncate(s, width, "…")
	if pad := width - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// Column is one column of a table: its name and its width in cells; a
// zero width takes what the others leave.
type Column struct {
	Name  string
	Width int
}

// Widths resolves the columns' widths for a table total cells wide, one
// space between columns; the flexible column gets at least 4.
func Widths(cols []Column, total int) []int {
	w := make([]int, len(cols))
	used, flex := 0, -1
	for i, c := range cols {
		if c.Width == 0 {
			flex = i
			continue
		}
		w[i] = c.Width
		used += c.Width
	}
	used += len(cols) - 1
	if flex >= 0 {
		w[flex] = max(4, total-used)
	}
	return w
}

// Row lays cells out in the widths, one space apart, cut to total.
func Row(cells []string, widths []int, total int) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = Fit(c, widths[i])
	}
	return Fit(strings.Join(parts, " "), total)
}

// Window is the first row to show so that the cursor's row is among the
// height rows shown.
func Window(cursor, rows, height int) int {
	if height <= 0 || rows <= height {
		return 0
	}
	return min(max(0, cursor-height+1), rows-height)
}

// Ago says how long ago t was, briefly ("3s", "5m", "2h", "4d"); "-" for
// no time.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Short(now.Sub(t))
}

// Short renders a duration in its largest unit.
func Short(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d < time.Minute:
		return neg + itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return neg + itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return neg + itoa(int(d/time.Hour)) + "h"
	}
	return neg + itoa(int(d/(24*time.Hour))) + "d"
}

func itoa(n int) string { return strconv.Itoa(n) }

// Dash is s, or "-" when it is empty.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cut cuts a rendered line to width cells, keeping its styling.
func Cut(s string, width int) string {
	return ansi.Truncate(s, width, "")
}
