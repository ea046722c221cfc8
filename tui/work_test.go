package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/tui/common"
)

// refusingAPI is the fake whose daemon refuses every control with err.
type refusingAPI struct {
	*fakeAPI
	err error
}

func (r refusingAPI) ControlWork(ctx context.Context, work, control, text string) (client.ControlResult, error) {
	if _, err := r.fakeAPI.ControlWork(ctx, work, control, text); err != nil {
		return client.ControlResult{}, err
	}
	return client.ControlResult{}, r.err
}

func (f *fakeAPI) controlled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.controls...)
}

// onWork shows the Work pane with the cursor on W0001, the running one
// (the list is newest first, so it is the second row).
func onWork(t *testing.T, api API, f *fakeAPI, w, h int) *harness {
	t.Helper()
	f.feed <- client.Changes{Tick: 1, Changed: true}
	hs := start(t, api, w, h)
	hs.waitShows("shell")
	hs.key("tab")
	hs.waitShows("deploy the website")
	hs.key("j")
	return hs
}

// until handles messages until cond holds, checking it also every few
// milliseconds: cond may wait on a request the fake holds, which sends
// no message.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case msg := <-h.msgs:
			h.send(msg)
		case <-tick.C:
		case <-deadline:
			h.t.Fatalf("never %s:\n%s", what, h.screen())
		}
	}
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.key(string(r))
	}
}

func TestControlsAskAndOnlyYesSends(t *testing.T) {
	for _, tc := range []struct {
		name, key, question, answer, shows string
		want                               []string
	}{
		{"interrupt yes", "i", "interrupt Work W0001? y to interrupt it, n to keep it", "y", "sent interrupt to Work W0001", []string{"W0001 interrupt"}},
		{"interrupt no", "i", "interrupt Work W0001? y to interrupt it", "n", "kept Work W0001 running", nil},
		{"stop yes", "s", "stop Work W0001? y fails its attempt, n keeps it", "y", "stopped Work W0001", []string{"W0001 stop"}},
		{"stop esc", "s", "stop Work W0001? y fails its attempt", "esc", "kept Work W0001 running", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			h := onWork(t, f, f, 80, 24)
			h.key(tc.key)
			h.waitShows(tc.question)
			if h.quits("q") {
				t.Fatal("q quit while the question was open")
			}
			if got := f.controlled(); len(got) != 0 {
				t.Fatalf("sent %v before the answer", got)
			}
			h.key(tc.answer)
			h.waitShows(tc.shows)
			if got := f.controlled(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("controls %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInjectPromptsThenAsksThenSends(t *testing.T) {
	f := newFake()
	h := onWork(t, f, f, 80, 24)
	h.key(">")
	h.waitShows("inject into Work W0001: ▏")
	// The line holds the keys: q and tab are text, not quit and a pane.
	h.typeText("hello")
	h.key("enter")
	h.waitShows(`inject "hello" into Work W0001? y to send it, n to drop it`)
	if got := f.controlled(); len(got) != 0 {
		t.Fatalf("sent %v before the answer", got)
	}
	h.key("y")
	h.waitShows(`injected "hello" into Work W0001`)
	if got := f.controlled(); strings.Join(got, ",") != "W0001 inject hello" {
		t.Fatalf("controls %v, want [W0001 inject hello]", got)
	}
}

func TestInjectNoAndEscDropTheLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"esc while typing", []string{">", "h", "i", "esc"}},
		{"n to the question", []string{">", "h", "i", "enter", "n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			h := onWork(t, f, f, 80, 24)
			for _, k := range tc.keys {
				h.key(k)
			}
			h.waitShows("dropped the inject into Work W0001")
			h.key("y")
			if got := f.controlled(); len(got) != 0 {
				t.Fatalf("sent %v after the line was dropped", got)
			}
			// The prompt is gone: the keys are the list's again.
			if !h.quits("q") {
				t.Fatal("q does not quit after the line was dropped")
			}
		})
	}
}

func TestInjectOfAnEmptyLineIsNotAsked(t *testing.T) {
	f := newFake()
	h := onWork(t, f, f, 80, 24)
	h.key(">")
	h.key("enter")
	s := h.waitShows("type the line to inject, or esc to drop it")
	if strings.Contains(s, "? y to send it") {
		t.Fatalf("an empty line was asked about:\n%s", s)
	}
}

func TestControlsOfWorkNotRunningAreNotAsked(t *testing.T) {
	for _, k := range []string{"i", "s", ">"} {
		f := newFake()
		f.feed <- client.Changes{Tick: 1, Changed: true}
		h := start(t, f, 80, 24)
		h.waitShows("shell")
		h.key("tab")
		h.waitShows("review pull request 7") // W0002, waiting, under the cursor
		h.key(k)
		verb := map[string]string{"i": "interrupt", "s": "stop", ">": "inject"}[k]
		s := h.waitShows(verb + " needs a running attempt; Work W0002 is waiting")
		if strings.Contains(s, "y to") || strings.Contains(s, "enter sends") {
			t.Fatalf("%s on waiting Work asked:\n%s", k, s)
		}
		h.key("y")
		if got := f.controlled(); len(got) != 0 {
			t.Fatalf("%s: sent %v", k, got)
		}
	}
}

func TestRefusedControlShowsTheDaemonsAnswer(t *testing.T) {
	f := newFake()
	api := refusingAPI{fakeAPI: f, err: &client.Error{Code: "unsupported", Message: "executor sh (package shell) does not declare interrupt"}}
	h := onWork(t, api, f, 80, 24)
	h.key("i")
	h.waitShows("interrupt Work W0001?")
	h.key("y")
	s := h.waitShows("interrupt refused: executor sh (package shell) does not declare interrupt")
	if strings.Contains(s, "sent interrupt") {
		t.Fatalf("a refused interrupt says it was sent:\n%s", s)
	}
}

func TestWorkListShowsAttemptAndRequesterByWidth(t *testing.T) {
	for _, tc := range []struct {
		width      int
		shows      []string
		hides      []string
		titleWhole bool
	}{
		{80, []string{"#2 shell/sh", "ATTEMPT", "deploy the website"}, []string{"REQUESTER", "alice", "SCOPE"}, true},
		{120, []string{"#2 shell/sh", "REQUESTER", "alice", "SCOPE", "ops"}, []string{"W0001"}, true},
		{160, []string{"#2 shell/sh", "alice", "W0001", "W0002"}, nil, true},
	} {
		f := newFake()
		f.work[0].Attempt, f.work[0].Executor = 2, "shell/sh"
		f.work[0].Display.Requester = "alice"
		h := live(t, f, tc.width, 24)
		h.key("tab")
		s := h.waitShows("deploy the website")
		for _, want := range tc.shows {
			if !strings.Contains(s, want) {
				t.Errorf("%d columns: the list lacks %q:\n%s", tc.width, want, s)
			}
		}
		for _, hide := range tc.hides {
			if strings.Contains(s, hide) {
				t.Errorf("%d columns: the list shows %q:\n%s", tc.width, hide, s)
			}
		}
		// W0002 has no attempt yet.
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "review pull request 7") && !strings.Contains(l, " - ") {
				t.Errorf("%d columns: the Work without an attempt shows none as -: %q", tc.width, l)
			}
		}
	}
}

func TestWorkDetailShowsRequesterLinksArtifactsAndScrolls(t *testing.T) {
	f := newFake()
	f.work[0].Display.Requester = "alice"
	f.work[0].Display.Links = []client.Link{{Label: "pull request", URL: "https://example.com/pr/7"}}
	f.work[0].InputCount = 40
	d := client.WorkDetail{
		Work:       f.work[0],
		Executions: []client.Execution{{ID: "x1", Attempt: 1, Package: "shell", Executor: "sh", State: "running"}},
	}
	for i := 1; i <= 40; i++ {
		d.Inputs = append(d.Inputs, client.WorkInput{N: uint64(i), Event: protocol.Event{Sequence: uint64(100 + i), Type: fmt.Sprintf("input.number%d", i), Source: "webhook"}})
	}
	f.detail = d
	f.artifacts = map[string][]client.Artifact{"W0001": {{Name: "report.txt", MediaType: "text/plain", Size: 2048, Execution: "x1"}}}
	h := onWork(t, f, f, 80, 24)
	h.key("enter")
	s := h.waitShows("Artifacts (1)")
	for _, want := range []string{"requester alice", "pull request  https://example.com/pr/7", "report.txt  text/plain  2.0 KiB  attempt #1", "lines 1-"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "input.number40") {
		t.Fatalf("the detail's last line shows before scrolling; the test needs a longer detail:\n%s", s)
	}
	for range 60 {
		h.key("j")
	}
	s = h.waitShows("input.number40")
	if strings.Contains(s, "requester alice") {
		t.Fatalf("scrolled to the end, the top still shows:\n%s", s)
	}
	if n := len(strings.Split(s, "\n")); n > 24 {
		t.Fatalf("the scrolled detail is %d lines at 24 rows", n)
	}
	h.key("k")
	h.waitFor("one line back up", func(s string) bool { return !strings.Contains(s, "input.number40") })
}

func TestWorkFilterNarrowsRows(t *testing.T) {
	f := newFake()
	f.work[0].Executor, f.work[0].Attempt = "shell/sh", 1
	h := live(t, f, 80, 24)
	h.key("tab")
	h.waitShows("deploy the website")
	h.key("/")
	h.typeText("review")
	s := h.waitShows("/review▏")
	if strings.Contains(s, "deploy the website") || !strings.Contains(s, "review pull request 7") {
		t.Fatalf("the filter review does not keep only W0002:\n%s", s)
	}
	// While typing, q is text, not quit.
	if h.quits("q") {
		t.Fatal("q quit while the filter was typed")
	}
	h.key("enter")
	s = h.waitShows("filter: reviewq")
	if !strings.Contains(s, "no Work matches reviewq") {
		t.Fatalf("an empty filtered list does not say so:\n%s", s)
	}
	// By executor: a field the list shows only as ATTEMPT.
	h.key("/")
	h.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	h.typeText("shell/sh")
	h.key("enter")
	s = h.waitShows("filter: shell/sh")
	if !strings.Contains(s, "deploy the website") || strings.Contains(s, "review pull request 7") {
		t.Fatalf("the filter shell/sh does not keep only W0001:\n%s", s)
	}
	h.key("/")
	h.key("esc")
	h.waitFor("both rows again", func(s string) bool {
		return strings.Contains(s, "deploy the website") && strings.Contains(s, "review pull request 7") && !strings.Contains(s, "filter:")
	})
}

func TestWaitsAndEventsFilter(t *testing.T) {
	f := newFake()
	f.waits = append(f.waits, client.Wait{ID: "T2", Work: "W0003", Owner: "schedule", Description: "the nightly window"})
	h := live(t, f, 80, 24)
	h.key("tab")
	h.key("tab")
	h.waitShows("approval of PR 7")
	h.key("/")
	h.typeText("nightly")
	h.key("enter")
	s := h.waitShows("filter: nightly")
	if strings.Contains(s, "approval of PR 7") || !strings.Contains(s, "the nightly window") {
		t.Fatalf("the Waits filter does not narrow:\n%s", s)
	}
	h.key("tab")
	f.feed <- client.Changes{Tick: 2, Changed: true, Next: 8, Latest: 8, Events: []protocol.Event{
		{Sequence: 7, Scope: "ops", Source: "webhook", Type: "github.push", Works: []string{"W0001"}},
		{Sequence: 8, Source: "operator", Type: "manual.note"},
	}}
	s = h.waitShows("manual.note")
	if !strings.Contains(s, "not routed: no scope") {
		t.Errorf("an Event without a scope does not say why it was not routed:\n%s", s)
	}
	h.key("/")
	h.typeText("push")
	h.key("enter")
	s = h.waitShows("filter: push")
	if strings.Contains(s, "manual.note") || !strings.Contains(s, "github.push") {
		t.Fatalf("the Events filter does not narrow:\n%s", s)
	}
	h.key("/")
	h.typeText("x")
	h.waitShows("no Event matches pushx")
}

func TestWorkPagesOlderWhenTheCursorReachesTheEnd(t *testing.T) {
	f := newFake()
	f.work = nil
	for i := 1; i <= 2500; i++ {
		f.work = append(f.work, client.Work{ID: fmt.Sprintf("W%05d", i), Scope: "ops", Kind: "deploy", State: client.WorkCompleted,
			Display: &client.Display{Title: fmt.Sprintf("job %05d", i)}, Created: epoch})
	}
	h := live(t, f, 80, 24)
	h.key("tab")
	s := h.waitShows("job 02500")
	if !strings.Contains(s, "1000 newest Work held") {
		t.Fatalf("the list does not say older Work follows:\n%s", s)
	}
	first := f.worksAsked()
	if q := first[len(first)-1]; !q.Newest || q.Limit != client.MaxWorkPage || q.After != "" {
		t.Fatalf("the first read asked %+v, want the newest page", q)
	}
	for range 998 {
		h.key("j")
	}
	if got := len(f.worksAsked()); got != len(first) {
		t.Fatalf("moving short of the end read Work %d more times", got-len(first))
	}
	h.key("j") // onto job 01501, the oldest held
	h.waitShows("2000 newest Work held")
	asked := f.worksAsked()
	if q := asked[len(asked)-1]; !q.Newest || q.After != "W01501" {
		t.Fatalf("the deeper read's last page asked %+v, want newest after W01501", q)
	}
	h.key("j")
	h.key("enter")
	h.waitShows("Work W01500")
	h.key("esc")
	// A change reads as deep again: two pages.
	before := len(f.worksAsked())
	f.feed <- client.Changes{Tick: 2, Changed: true}
	h.waitFor("two more pages read", func(string) bool { return len(f.worksAsked()) >= before+2 && !h.m.reading })
	if got := len(f.worksAsked()) - before; got != 2 {
		t.Fatalf("a change read %d pages, want 2", got)
	}
}

func TestWorkReadsStopAtTheCap(t *testing.T) {
	m := New(context.Background(), newFake(), Options{})
	m.Update(common.MoreWorkMsg{Pages: common.MaxWorkPages + 5})
	if m.workPages != common.MaxWorkPages {
		t.Fatalf("asked %d pages deep: reads go %d deep, want the cap %d", common.MaxWorkPages+5, m.workPages, common.MaxWorkPages)
	}
}

func TestOneSnapshotInFlightUnderABurst(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	h.key("tab") // Work
	h.key("tab") // Waits
	h.key("tab") // Events
	gate := make(chan struct{})
	f.mu.Lock()
	f.worksGate = gate
	f.mu.Unlock()
	base := len(f.worksAsked())
	f.feed <- client.Changes{Tick: 2, Changed: true}
	h.until("a read in flight", func() bool { return len(f.worksAsked()) == base+1 })
	// A burst of 60 changes while the read is held.
	go func() {
		for i := uint64(1); i <= 60; i++ {
			f.feed <- client.Changes{Tick: 2 + i, Changed: true, Next: i, Latest: i,
				Events: []protocol.Event{{Sequence: i, Scope: "ops", Source: "webhook", Type: fmt.Sprintf("burst.n%d", i)}}}
		}
	}()
	h.waitShows("burst.n60")
	if got := len(f.worksAsked()) - base; got != 1 {
		t.Fatalf("during the burst %d reads were started, want the one in flight", got)
	}
	f.mu.Lock()
	f.work = append(f.work, client.Work{ID: "W0099", Scope: "ops", Kind: "deploy", State: client.WorkPending, Display: &client.Display{Title: "after the burst"}})
	f.worksGate = nil
	f.mu.Unlock()
	close(gate)
	h.waitFor("the follow-up read done", func(string) bool { return len(f.worksAsked())-base == 2 && !h.m.reading })
	if h.m.dirty {
		t.Fatal("a change is still pending after the follow-up read")
	}
	h.key("shift+tab") // Waits
	h.key("shift+tab") // Work
	h.waitShows("after the burst")
	if got := len(f.worksAsked()) - base; got != 2 {
		t.Fatalf("the burst cost %d reads, want 2 (the one in flight and one after)", got)
	}
}

func TestMouseWheelMovesTheWorkCursor(t *testing.T) {
	f := newFake()
	f.detail = client.WorkDetail{Work: f.work[0]}
	h := live(t, f, 80, 24)
	h.key("tab")
	h.waitShows("deploy the website")
	// Without the wheel, the cursor is on W0002, which the fake has no
	// detail of.
	h.key("enter")
	h.waitShows("reading Work W0002: no Work W0002")
	h.key("esc")
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	h.key("enter")
	s := h.waitShows("state running")
	if !strings.Contains(s, "Work W0001") {
		t.Fatalf("after the wheel moved down, enter did not open W0001:\n%s", s)
	}
	h.key("esc")
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	h.key("enter")
	h.waitShows("Work W0002")
}
