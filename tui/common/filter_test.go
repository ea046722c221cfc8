package common

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/tui/keymap"
)

func press(f *Filter, keys ...tea.KeyPressMsg) {
	km := keymap.Default()
	for _, k := range keys {
		f.Key(km, k)
	}
}

func text(s string) tea.KeyPressMsg {
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

func TestFilterTypedThenKeptMatchesEveryWordIgnoringCase(t *testing.T) {
	var f Filter
	km := keymap.Default()
	if f.Key(km, text("x")) {
		t.Fatal("a key before / was taken by the filter")
	}
	press(&f, text("/"), text("D"), text("e"), text("p"), text(" "), text("o"), text("p"), text("s"))
	if !f.Typing() || f.Query() != "Dep ops" {
		t.Fatalf("typing %v query %q, want typing and %q", f.Typing(), f.Query(), "Dep ops")
	}
	press(&f, tea.KeyPressMsg{Code: tea.KeyEnter})
	if f.Typing() || f.Query() != "Dep ops" {
		t.Fatalf("after enter: typing %v query %q", f.Typing(), f.Query())
	}
	for _, c := range []struct {
		fields []string
		want   bool
	}{
		{[]string{"deploy the website", "ops"}, true},
		{[]string{"deploy the website", "dev"}, false},
		{[]string{"review", "ops"}, false},
	} {
		if got := f.Match(c.fields...); got != c.want {
			t.Errorf("Match(%q) = %v, want %v", c.fields, got, c.want)
		}
	}
}

func TestFilterEscWhileTypingDropsItAndBackspaceTakesOneBack(t *testing.T) {
	var f Filter
	press(&f, text("/"), text("a"), text("é"), tea.KeyPressMsg{Code: tea.KeyBackspace})
	if f.Query() != "a" {
		t.Fatalf("query %q after backspace, want %q", f.Query(), "a")
	}
	press(&f, tea.KeyPressMsg{Code: tea.KeyEscape})
	if f.Typing() || f.Query() != "" || f.Status() != "" {
		t.Fatalf("after esc: typing %v query %q status %q", f.Typing(), f.Query(), f.Status())
	}
	if !f.Match("anything") {
		t.Fatal("an empty filter refused a row")
	}
}
