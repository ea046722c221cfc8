package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// fakeAPI is the management API as the dashboard declares it: a fixed
// state, a change feed fed by the test, and a switch that makes every
// request fail as if the daemon went away.
type fakeAPI struct {
	mu        sync.Mutex
	exts      []client.Extension
	work      []client.Work
	waits     []client.Wait
	detail    client.WorkDetail
	down      bool
	cancelled []string
	// logs and wire are each package's stderr log lines and wire tap;
	// artifacts each Work's; doctor what GET /v1/doctor answers.
	logs      map[string][]string
	wire      map[string][]client.WireEntry
	artifacts map[string][]client.Artifact
	doctor    client.Doctor
	// controls, restarts and reloads record the actions asked for
	// ("W0001 interrupt", "W0001 inject hello", a package's name).
	controls []string
	restarts []string
	reloads  int
	// routes is where GET /v1/events says each Event was routed;
	// eventReads counts those reads.
	routes     map[string]client.EventRoute
	eventReads int
	// feed carries the change feed's answers; Changes waits for one.
	feed chan client.Changes
	// workQueries records each Works call's query; worksGate, when set,
	// holds every Works call until it is closed.
	workQueries []client.WorkQuery
	worksGate   chan struct{}
}

var errGone = errors.New("no daemon answers at /tmp/x/open-conduit.sock")

func (f *fakeAPI) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errGone
	}
	return nil
}

func (f *fakeAPI) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeAPI) Extensions(context.Context) (client.Extensions, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.Extensions{Extensions: f.exts}, nil
}

// Works pages the Work as the daemon does: by ID, ascending or (Newest)
// descending, after the cursor, at most Limit with Next set when more
// follows.
func (f *fakeAPI) Works(ctx context.Context, q client.WorkQuery) (client.WorkList, error) {
	if err := f.fail(); err != nil {
		return client.WorkList{}, err
	}
	f.mu.Lock()
	f.workQueries = append(f.workQueries, q)
	gate := f.worksGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return client.WorkList{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := slices.Clone(f.work)
	slices.SortFunc(ws, func(a, b client.Work) int { return strings.Compare(a.ID, b.ID) })
	if q.Newest {
		slices.Reverse(ws)
	}
	if q.After != "" {
		ws = slices.DeleteFunc(ws, func(w client.Work) bool {
			if q.Newest {
				return w.ID >= q.After
			}
			return w.ID <= q.After
		})
	}
	var l client.WorkList
	if q.Limit > 0 && len(ws) > q.Limit {
		ws = ws[:q.Limit]
		l.Next = ws[len(ws)-1].ID
	}
	l.Work = ws
	return l, nil
}

// worksAsked is every Works query so far.
func (f *fakeAPI) worksAsked() []client.WorkQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.workQueries)
}

func (f *fakeAPI) WorkDetail(_ context.Context, id string) (client.WorkDetail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.detail.Work.ID != id {
		return client.WorkDetail{}, errors.New("no Work " + id)
	}
	return f.detail, nil
}

func (f *fakeAPI) Waits(context.Context, client.WaitsQuery) (client.Waits, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.Waits{Waits: f.waits}, nil
}

func (f *fakeAPI) Changes(ctx context.Context, _ client.ChangesQuery) (client.Changes, error) {
	if err := f.fail(); err != nil {
		return client.Changes{}, err
	}
	select {
	case ch := <-f.feed:
		return ch, nil
	case <-ctx.Done():
		return client.Changes{}, ctx.Err()
	}
}

func (f *fakeAPI) CancelWork(_ context.Context, id, _ string) (client.Work, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return client.Work{ID: id, State: client.WorkCancelled}, nil
}

func (f *fakeAPI) cancels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancelled...)
}

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newFake() *fakeAPI {
	return &fakeAPI{
		feed: make(chan client.Changes, 16),
		exts: []client.Extension{
			{Name: "shell", Version: "1.2.0", Source: "bundled", State: "running", PID: 4242, Restarts: 1, Protocol: 1},
			{Name: "broken", Source: "installed", State: "refused", Code: "handshake_failed", LastError: "handshake timed out after 10s"},
		},
		work: []client.Work{
			{ID: "W0001", Scope: "ops", Kind: "deploy", State: client.WorkRunning, Display: &client.Display{Title: "deploy the website"}, Created: epoch.Add(-90 * time.Second)},
			{ID: "W0002", Scope: "ops", Kind: "review", State: client.WorkWaiting, Display: &client.Display{Title: "review pull request 7"}, Created: epoch.Add(-3 * time.Hour)},
		},
		waits: []client.Wait{
			{ID: "T1", Work: "W0002", Owner: "github", Description: "approval of PR 7", Progress: "1 of 2 approvals", Due: epoch.Add(5 * time.Minute)},
		},
	}
}

// harness runs the model as bubbletea would, one message at a time on the
// test's goroutine, with its commands run on their own goroutines.
type harness struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
}

func start(t *testing.T, api API, w, h int) *harness {
	t.Helper()
	return startWith(t, api, Options{Retry: 10 * time.Millisecond, Now: func() time.Time { return epoch }}, w, h)
}

func startWith(t *testing.T, api API, opts Options, w, h int) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(ctx, api, opts)
	hs := &harness{t: t, m: m, msgs: make(chan tea.Msg, 64)}
	hs.run(m.Init())
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

// run runs a command on its own goroutine; batches are unpacked, and the
// redraw clock is dropped (the tests read a fixed clock).
func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				h.run(c)
			}
		case clockMsg, nil:
		default:
			h.msgs <- msg
		}
	}()
}

func (h *harness) send(msg tea.Msg) {
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// key presses one key, as its name (a rune, "tab", "shift+tab", "enter",
// "esc").
func (h *harness) key(name string) { h.send(keyPress(name)) }

// quits presses one key and reports whether it quit the dashboard.
func (h *harness) quits(name string) bool {
	_, cmd := h.m.Update(keyPress(name))
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func keyPress(name string) tea.KeyPressMsg {
	k := tea.KeyPressMsg{}
	switch name {
	case "tab":
		k.Code = tea.KeyTab
	case "shift+tab":
		k.Code, k.Mod = tea.KeyTab, tea.ModShift
	case "enter":
		k.Code = tea.KeyEnter
	case "esc":
		k.Code = tea.KeyEscape
	case "down":
		k.Code = tea.KeyDown
	case "ctrl+c":
		k.Code, k.Mod = 'c', tea.ModCtrl
	default:
		k.Code, k.Text = rune(name[0]), name
	}
	return k
}

// screen is the rendered view without styling.
func (h *harness) screen() string { return ansi.Strip(h.m.Render()) }

// waitFor handles messages until the screen satisfies ok, or fails after
// a generous deadline.
func (h *harness) waitFor(what string, ok func(string) bool) string {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if s := h.screen(); ok(s) {
			return s
		}
		select {
		case msg := <-h.msgs:
			h.send(msg)
		case <-deadline:
			h.t.Fatalf("the screen never showed %s:\n%s", what, h.screen())
		}
	}
}

func (h *harness) waitShows(text string) string {
	h.t.Helper()
	return h.waitFor(text, func(s string) bool { return strings.Contains(s, text) })
}

// live feeds the first change and waits for the panes to be read.
func live(t *testing.T, f *fakeAPI, w, h int) *harness {
	t.Helper()
	f.feed <- client.Changes{Tick: 1, Changed: true, Latest: 0}
	hs := start(t, f, w, h)
	hs.waitShows("shell")
	return hs
}

func TestTabSwitchesPanes(t *testing.T) {
	f := newFake()
	// Logs and Wire, shown following no package, follow the one under the
	// Extensions pane's cursor: shell, the first.
	f.logs = map[string][]string{"shell": {"shell started"}, "broken": {"broken started"}}
	f.wire = map[string][]client.WireEntry{"shell": {wireEntry(1, client.WireToExtension, client.WireRequest, "initialize", "1", `{}`)}}
	h := live(t, f, 80, 24)
	if s := h.screen(); !strings.Contains(s, "[Extensions]") {
		t.Fatalf("the first pane shown is not Extensions:\n%s", s)
	}
	for _, step := range []struct{ key, pane, shows, hides string }{
		{"tab", "[Work]", "deploy the website", "handshake_failed"},
		{"tab", "[Waits]", "approval of PR 7", "deploy the website"},
		{"tab", "[Events]", "no Events yet", "approval of PR 7"},
		{"tab", "[Logs]", "shell started", "no Events yet"},
		{"tab", "[Wire]", "initialize", "shell started"},
		{"tab", "[Extensions]", "handshake_failed", "initialize"},
		{"shift+tab", "[Wire]", "initialize", "handshake_failed"},
		{"shift+tab", "[Logs]", "shell started", "initialize"},
		{"shift+tab", "[Events]", "no Events yet", "shell started"},
		{"shift+tab", "[Waits]", "approval of PR 7", "no Events yet"},
	} {
		h.key(step.key)
		s := h.waitShows(step.shows)
		if strings.Contains(s, step.hides) || !strings.Contains(s, step.pane) {
			t.Fatalf("after %s the screen does not show only %s:\n%s", step.key, step.pane, s)
		}
	}
}

func TestLogsShownFollowsThePackageUnderTheExtensionsCursor(t *testing.T) {
	f := newFake()
	f.logs = map[string][]string{"shell": {"shell started"}, "broken": {"broken started"}}
	h := live(t, f, 80, 24)
	h.key("j")         // broken
	h.key("shift+tab") // Wire
	h.key("shift+tab") // Logs
	s := h.waitShows("broken started")
	if strings.Contains(s, "shell started") || !strings.Contains(s, "[Logs]") {
		t.Fatalf("the Logs pane does not follow broken alone:\n%s", s)
	}
	// Shown again, it keeps the package it follows.
	h.key("tab")
	h.key("tab")
	h.key("k") // shell, on the Extensions pane
	h.key("shift+tab")
	h.key("shift+tab")
	if s := h.waitShows("[Logs]"); !strings.Contains(s, "broken started") {
		t.Fatalf("shown again, the Logs pane left broken:\n%s", s)
	}
}

func TestHelpBarShowsTheShownPanesKeys(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	for _, step := range []struct {
		key   string
		shows []string
		hides string
	}{
		{"", []string{"enter detail", "r restart", "l log", "w wire", "? all keys", "q quit"}, "c cancel"},
		{"tab", []string{"c cancel", "i interrupt", "s stop", "> inject", "? all keys", "q quit"}, "r restart"},
		{"tab", []string{"/ filter", "? all keys", "q quit", "tab next pane"}, "c cancel"},
	} {
		if step.key != "" {
			h.key(step.key)
		}
		s := h.screen()
		lines := strings.Split(s, "\n")
		bar := lines[len(lines)-1]
		for _, want := range step.shows {
			if !strings.Contains(bar, want) {
				t.Fatalf("the help bar lacks %q: %q", want, bar)
			}
		}
		if strings.Contains(bar, step.hides) {
			t.Fatalf("the help bar shows another pane's %q: %q", step.hides, bar)
		}
	}
}

func TestPanesShowTheirColumns(t *testing.T) {
	f := newFake()
	h := live(t, f, 120, 24)
	s := h.screen()
	for _, want := range []string{"1.2.0", "bundled", "running", "4242", "handshake timed out"} {
		if !strings.Contains(s, want) {
			t.Errorf("Extensions pane lacks %q:\n%s", want, s)
		}
	}
	h.key("tab")
	s = h.waitShows("deploy the website")
	// Newest first, with ages against the fixed clock.
	if strings.Index(s, "review pull request 7") > strings.Index(s, "deploy the website") {
		t.Errorf("Work is not newest first:\n%s", s)
	}
	if !strings.Contains(s, "1m") || !strings.Contains(s, "3h") {
		t.Errorf("Work pane lacks the ages 1m and 3h:\n%s", s)
	}
	h.key("tab")
	s = h.waitShows("approval of PR 7")
	for _, want := range []string{"github", "5m", "1 of 2 approvals"} {
		if !strings.Contains(s, want) {
			t.Errorf("Waits pane lacks %q:\n%s", want, s)
		}
	}
}

func TestEventsPaneTailsTheFeed(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	h.key("tab")
	h.key("tab")
	h.key("tab")
	h.waitShows("no Events yet")
	f.feed <- client.Changes{Tick: 2, Changed: true, Next: 7, Latest: 7, Events: []protocol.Event{
		{Sequence: 7, Scope: "ops", Source: "webhook", Type: "github.push", Works: []string{"W0001"}},
	}}
	s := h.waitShows("github.push")
	if !strings.Contains(s, "W0001") || !strings.Contains(s, "webhook") {
		t.Fatalf("the Event's row lacks its source or Work:\n%s", s)
	}
}

func TestEventsPaneSaysWhereEachEventWasRouted(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	for range 3 {
		h.key("tab")
	}
	h.waitShows("no Events yet")
	f.feed <- client.Changes{Tick: 2, Next: 9, Latest: 9, Events: []protocol.Event{
		{ID: "E7", Sequence: 7, Scope: "ops", Source: "webhook", Type: "github.push"},
		{ID: "E8", Sequence: 8, Scope: "ops", Source: "webhook", Type: "github.star"},
		{ID: "E9", Sequence: 9, Source: "operator", Type: "manual.note"},
	}, Routes: map[string]client.EventRoute{
		"E7": {State: client.RouteRouted, Work: "W0001", Created: true},
		"E8": {State: client.RoutePending},
	}}
	s := h.waitShows("github.star")
	for _, want := range []string{"W0001 (new)", "routing…", "not routed: no scope"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the tail lacks %q:\n%s", want, s)
		}
	}
	// The router decides later; the next change reads the pending
	// decision once.
	f.mu.Lock()
	f.routes = map[string]client.EventRoute{"E8": {State: client.RouteUnmatched}}
	f.mu.Unlock()
	f.feed <- client.Changes{Tick: 3, Changed: true, Next: 9, Latest: 9}
	s = h.waitShows("no route matched")
	if strings.Contains(s, "routing…") {
		t.Fatalf("a decided Event still shows as pending:\n%s", s)
	}
}

func TestEnterOpensWorkDetailAndEscGoesBack(t *testing.T) {
	f := newFake()
	exit := 0
	f.detail = client.WorkDetail{
		Work:       f.work[0],
		Executions: []client.Execution{{Attempt: 1, Package: "shell", Executor: "sh", State: "settled", Outcome: "waiting", ExitCode: &exit}},
		Wait:       &f.waits[0],
		Inputs:     []client.WorkInput{{N: 1, Event: protocol.Event{Sequence: 3, Type: "github.pull_request", Source: "webhook"}}},
	}
	h := live(t, f, 80, 24)
	h.key("tab")
	h.waitShows("deploy the website")
	h.key("j") // the second row: W0001, the older one.
	h.key("enter")
	s := h.waitShows("Attempts (1)")
	for _, want := range []string{"Work W0001", "#1 shell/sh waiting exit 0", "approval of PR 7", "due in 5m", "github.pull_request"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail lacks %q:\n%s", want, s)
		}
	}
	h.key("esc")
	s = h.waitShows("review pull request 7")
	if strings.Contains(s, "Attempts") {
		t.Fatalf("esc left the detail shown:\n%s", s)
	}
}

func TestCancelAsksAndOnlyYesCancels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		want   []string
		shows  string
	}{
		{"yes cancels", "y", []string{"W0002"}, "Work W0002 is cancelled"},
		{"no keeps", "n", nil, "kept Work W0002"},
		{"esc keeps", "esc", nil, "kept Work W0002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			h := live(t, f, 80, 24)
			h.key("tab")
			h.waitShows("review pull request 7")
			h.key("c")
			h.waitShows("cancel Work W0002? y to cancel it")
			// While the question is open, tab and q are answers' neighbours,
			// not pane switches or quitting.
			h.key("tab")
			if h.quits("q") {
				t.Fatal("q quit while the question was open")
			}
			h.waitShows("cancel Work W0002?")
			h.key(tc.answer)
			h.waitShows(tc.shows)
			if got := f.cancels(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("cancelled %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCancelOfFinishedWorkIsNotAsked(t *testing.T) {
	f := newFake()
	f.work[1].State = client.WorkCompleted
	h := live(t, f, 80, 24)
	h.key("tab")
	h.waitShows("review pull request 7")
	h.key("c")
	s := h.waitShows("Work W0002 is completed; only open Work can be cancelled")
	if strings.Contains(s, "y to cancel it") {
		t.Fatalf("a finished Work's cancel was asked:\n%s", s)
	}
	h.key("y")
	if got := f.cancels(); len(got) != 0 {
		t.Fatalf("cancelled %v", got)
	}
}

func TestDisconnectedIsShownAndClearsOnRecovery(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	if s := h.screen(); strings.Contains(s, "disconnected") {
		t.Fatalf("a live dashboard says disconnected:\n%s", s)
	}
	f.setDown(true)
	// The long poll in flight ends when the daemon goes; the next fails.
	f.feed <- client.Changes{Tick: 2, Changed: true}
	s := h.waitShows("disconnected, retrying")
	if !strings.Contains(s, "no daemon answers") {
		t.Errorf("the failure is not shown:\n%s", s)
	}
	f.setDown(false)
	f.feed <- client.Changes{Tick: 1, Changed: true}
	h.waitFor("live again", func(s string) bool {
		return strings.Contains(s, "live") && !strings.Contains(s, "disconnected")
	})
}

func TestFitsTheTerminal(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {60, 15}, {160, 48}} {
		f := newFake()
		f.work[0].Display.Title = strings.Repeat("a very long title ", 20)
		f.exts[1].LastError = strings.Repeat("a long error ", 30)
		h := live(t, f, size.w, size.h)
		for _, keys := range [][]string{nil, {"tab"}, {"tab"}, {"tab"}, {"?"}, {"tab", "tab", "enter"}} {
			for _, k := range keys {
				h.key(k)
			}
			lines := strings.Split(h.screen(), "\n")
			if len(lines) > size.h {
				t.Errorf("%dx%d: %d lines:\n%s", size.w, size.h, len(lines), h.screen())
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size.w {
					t.Errorf("%dx%d: a line %d wide: %q", size.w, size.h, w, l)
				}
			}
		}
	}
}

func TestQuitKeys(t *testing.T) {
	for _, tc := range []struct {
		key   string
		modal bool
		quits bool
	}{
		{"q", false, true},
		{"ctrl+c", false, true},
		{"j", false, false},
		{"q", true, false},
		{"ctrl+c", true, true},
	} {
		f := newFake()
		h := live(t, f, 80, 24)
		if tc.modal {
			h.key("tab")
			h.waitShows("review pull request 7")
			h.key("c")
			h.waitShows("y to cancel it")
		}
		if got := h.quits(tc.key); got != tc.quits {
			t.Errorf("%s (question open %v): quits %v, want %v", tc.key, tc.modal, got, tc.quits)
		}
	}
}

func TestNoColorRendersNoColour(t *testing.T) {
	for _, color := range []bool{false, true} {
		m := New(context.Background(), newFake(), Options{Color: color, Now: func() time.Time { return epoch }})
		out := m.Render()
		hasColour := strings.Contains(out, "\x1b[38;") || strings.Contains(out, "\x1b[48;") || strings.Contains(out, "\x1b[3") && strings.Contains(out, "m")
		if color != hasColour {
			t.Errorf("color %v: colour escapes present %v:\n%q", color, hasColour, out)
		}
	}
}

func TestResizeRedrawsAtTheNewWidth(t *testing.T) {
	f := newFake()
	f.exts[1].LastError = "handshake timed out after 10s while starting its second listener"
	h := live(t, f, 80, 24)
	if strings.Contains(h.screen(), "second listener") {
		t.Fatalf("80 columns show the whole error:\n%s", h.screen())
	}
	h.send(tea.WindowSizeMsg{Width: 160, Height: 40})
	s := h.screen()
	if !strings.Contains(s, "second listener") {
		t.Fatalf("160 columns do not show the whole error:\n%s", s)
	}
	if n := len(strings.Split(s, "\n")); n != 40 {
		t.Fatalf("at 40 rows the screen has %d lines", n)
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	for _, l := range strings.Split(h.screen(), "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Fatalf("back at 80 columns a line is %d wide: %q", ansi.StringWidth(l), l)
		}
	}
}

func TestColorWantedHonoursNoColor(t *testing.T) {
	for _, tc := range []struct {
		noColor, term string
		want          bool
	}{
		{"", "xterm-256color", true},
		{"1", "xterm-256color", false},
		{"yes", "", false},
		{"", "dumb", false},
	} {
		env := map[string]string{"NO_COLOR": tc.noColor, "TERM": tc.term}
		if got := colorWanted(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("NO_COLOR=%q TERM=%q: colour %v, want %v", tc.noColor, tc.term, got, tc.want)
		}
	}
}
