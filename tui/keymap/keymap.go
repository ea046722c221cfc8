// Package keymap is the dashboard's key bindings, in one place so the help
// bar and every pane agree on them.
package keymap

import "charm.land/bubbles/v2/key"

// KeyMap is every key the dashboard answers.
type KeyMap struct {
	NextPane key.Binding
	PrevPane key.Binding
	Up       key.Binding
	Down     key.Binding
	Enter    key.Binding
	Back     key.Binding
	Cancel   key.Binding
	// Interrupt, Stop and Inject act on a Work's running execution.
	Interrupt key.Binding
	Stop      key.Binding
	Inject    key.Binding
	// Restart restarts the selected package; Logs and Wire open its
	// stderr log and its wire tap.
	Restart key.Binding
	Logs    key.Binding
	Wire    key.Binding
	// Apply reads the daemon's config file again and applies it.
	Apply key.Binding
	// Filter starts typing a filter for the shown list.
	Filter key.Binding
	Yes    key.Binding
	No     key.Binding
	Help   key.Binding
	Quit   key.Binding
}

// Default is the dashboard's keymap.
func Default() *KeyMap {
	return &KeyMap{
		NextPane:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:  key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Enter:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Cancel:    key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel Work")),
		Interrupt: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "interrupt Work")),
		Stop:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stop Work")),
		Inject:    key.NewBinding(key.WithKeys(">"), key.WithHelp(">", "inject a line")),
		Restart:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart package")),
		Logs:      key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "package log")),
		Wire:      key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wire tap")),
		Apply:     key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "apply config file")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Yes:       key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "confirm")),
		No:        key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n", "keep")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "all keys")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// FullHelp is what ? shows: every key, in columns.
func (k *KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.NextPane, k.PrevPane, k.Up, k.Down, k.Enter, k.Back},
		{k.Filter, k.Cancel, k.Interrupt, k.Stop, k.Inject},
		{k.Restart, k.Logs, k.Wire, k.Apply},
		{k.Yes, k.No, k.Help, k.Quit},
	}
}
