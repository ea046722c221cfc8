package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

func TestWorkInputsPageSaysItsRangeTheCountAndHowToReadOn(t *testing.T) {
	routed := &client.RouteDecision{State: client.RouteRouted, Route: 0, Work: "w_a",
		Reasons: []client.RouteReason{{Route: 0, Handler: "manual", Match: true}}}
	p := client.WorkInputsPage{Work: "w_a", InputCount: 70, Next: 66, Inputs: []client.WorkInput{
		{N: 65, Event: protocol.Event{ID: "e65", Sequence: 80, Type: "manual.request"}, Route: routed},
		{N: 66, Event: protocol.Event{ID: "e66", Sequence: 81, Type: "manual.request"}, Route: routed},
	}}
	cases := []struct {
		name      string
		page      client.WorkInputsPage
		more      string
		want      []string
		wantNotIn []string
	}{
		{"a page with more", p, "open-conduit work inputs w_a --after 66", []string{"N ", "65 ", "e66", "route 0 (manual) joined w_a",
			"inputs 65-66 of 70", "more: open-conduit work inputs w_a --after 66"}, nil},
		{"the last page", client.WorkInputsPage{Work: "w_a", InputCount: 66, Inputs: p.Inputs}, "",
			[]string{"inputs 65-66 of 66"}, []string{"more:"}},
		{"past the last", client.WorkInputsPage{Work: "w_a", InputCount: 66}, "",
			[]string{"no inputs of w_a here (it has 66)"}, []string{"more:", "SEQ"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := printed(t, func(w io.Writer) error { return writeInputsPage(w, tc.page, tc.more) })
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("the page lacks %q:\n%s", want, out)
				}
			}
			for _, not := range tc.wantNotIn {
				if strings.Contains(out, not) {
					t.Errorf("the page has %q:\n%s", not, out)
				}
			}
		})
	}
}

func TestWorkInputsMoreHintKeepsTheIDAndEveryFlag(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cwd, _ = filepath.Abs(".")
	inv, err := parse([]string{"work", "inputs", "w_a b", "--limit", "10", "--after", "5", "--state", "st"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := inv.runner(context.Background(), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := "open-conduit work inputs 'w_a b' --after 15 --limit 10 --state " + filepath.Join(cwd, "st")
	if got := inputsRerun(r, "w_a b", 15); got != want {
		t.Errorf("hint\n got %s\nwant %s", got, want)
	}
}

func TestWorkShowSaysHowManyInputsItLeftOut(t *testing.T) {
	in := client.WorkInput{N: 70, Event: protocol.Event{ID: "e70", Sequence: 9, Type: "manual.request"}}
	cases := []struct {
		name string
		d    client.WorkDetail
		want string
		not  string
	}{
		{"truncated", client.WorkDetail{Work: client.Work{ID: "w_a", InputCount: 70, Inputs: []string{"e70"}}, Inputs: []client.WorkInput{in}},
			"70 inputs (last 1 shown; 'open-conduit work inputs w_a' lists them all)", ""},
		// Negative control: every input shown is no truncation.
		{"whole", client.WorkDetail{Work: client.Work{ID: "w_a", InputCount: 1, Inputs: []string{"e70"}}, Inputs: []client.WorkInput{in}},
			"inputs    1\n", "shown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := printed(t, func(w io.Writer) error { return writeWorkDetail(w, tc.d) })
			if !strings.Contains(out, tc.want) || (tc.not != "" && strings.Contains(out, tc.not)) {
				t.Errorf("show lacks %q (or has %q):\n%s", tc.want, tc.not, out)
			}
		})
	}
}
