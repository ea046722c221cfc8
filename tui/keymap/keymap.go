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
	Yes      key.Binding
	No       key.Binding
	Help     key.Binding
	Quit     key.Binding
}

// Default is the dashboard's keymap.
func Default() *KeyMap {
	return &KeyMap{
		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Cancel:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel Work")),
		Yes:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "confirm")),
		No:       key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n", "keep")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "all keys")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp is the help bar's one line.
func (k *KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextPane, k.Down, k.Enter, k.Cancel, k.Help, k.Quit}
}

// FullHelp is what ? shows: every key, in columns.
func (k *KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.NextPane, k.PrevPane, k.Up, k.Down},
		{k.Enter, k.Back, k.Cancel},
		{k.Yes, k.No, k.Help, k.Quit},
	}
}
