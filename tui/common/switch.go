package common

// SwitchMsg asks the root model to show the pane titled Pane; a page
// returns it from a command (l on a package shows its log). The root
// model hands it on to every page too, so the pane shown learns Package,
// the package it is to follow ("" keeps the one it follows).
type SwitchMsg struct {
	Pane    string
	Package string
}

// ShownMsg tells a pane it has just been shown, and which package is
// under the Extensions pane's cursor ("" for none).
type ShownMsg struct{ Package string }

// RefreshMsg asks the root model to read the panes' state again now,
// after an action whose effect the change feed does not carry (a package
// restarted, the config applied).
type RefreshMsg struct{}
