package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/open-conduit/open-conduit/client"
)

// appendLog writes lines to a package's fake stderr log, as the package
// would while the dashboard tails it.
func (f *fakeAPI) appendLog(name string, lines ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs == nil {
		f.logs = map[string][]string{}
	}
	f.logs[name] = append(f.logs[name], lines...)
}

func (f *fakeAPI) restarted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.restarts...)
}

func (f *fakeAPI) reloaded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloads
}

// press sends one key by its code (pgup, home, left…).
func (h *harness) press(code rune) { h.send(tea.KeyPressMsg{Code: code}) }

// fits fails the test when a line of the screen is wider than w or the
// screen has more than rows lines.
func fits(t *testing.T, h *harness, what string, w, rows int) {
	t.Helper()
	s := h.screen()
	lines := strings.Split(s, "\n")
	if len(lines) > rows {
		t.Errorf("%s at %dx%d: %d lines:\n%s", what, w, rows, len(lines), s)
	}
	for _, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("%s at %dx%d: a line %d wide: %q", what, w, rows, n, l)
		}
	}
}

// richFake is the fake with a package that says everything the detail
// shows, and a doctor whose checks concern it, another package and the
// daemon.
func richFake() *fakeAPI {
	f := newFake()
	e := &f.exts[0]
	e.Title = "Shell executor"
	e.Dir = "/opt/oc/packages/shell"
	e.Started = epoch.Add(-5 * time.Minute)
	e.NextRestart = time.Time{}
	e.Pending = "its manifest changed on disk; a restart applies it"
	e.Permissions = []string{"kv.read", "kv.write", "process.spawn"}
	e.GrantedEnv = []string{"SHELL_TOKEN"}
	e.MissingEnv = []string{"SHELL_PROXY"}
	e.Log = "/state/logs/shell.log"
	e.Refused = 2
	e.Tasks = []client.Task{{Name: "sweep", Every: 60, Runs: 4, LastRun: epoch.Add(-30 * time.Second), LastErr: "disk full"}}
	f.exts[1].Remedy = "check the package's handshake: open-conduit extension logs broken"
	f.exts[1].Surfaces = []string{"executor broken", "operation broken.fix"}
	f.doctor = client.Doctor{Checks: []client.Check{
		{Name: "store", Status: "ok", Detail: "the store opens"},
		{Name: "extension shell", Status: "warn", Code: "extension_restarted", Detail: "running 1.2.0 after 1 restart(s)", Remedy: "read its log"},
		{Name: "shell-sandbox", Status: "fail", Code: "sandbox_missing", Detail: "bwrap is not installed", Remedy: "install bubblewrap"},
		{Name: "extension broken", Status: "fail", Code: "handshake_failed", Detail: "refused: handshake timed out"},
		{Name: "broken_disk", Status: "ok", Detail: "broken's disk check"},
	}}
	return f
}

func TestExtensionDetailShowsFieldsAndItsChecks(t *testing.T) {
	f := richFake()
	h := live(t, f, 160, 48)
	h.key("enter")
	s := h.waitShows("Doctor checks (2)")
	for _, want := range []string{
		"Package shell", "Shell executor", "1.2.0", "bundled", "/opt/oc/packages/shell",
		"state    running", "pid 4242", "uptime 5m", "restarts 1", "next restart -", "protocol 1",
		"its manifest changed on disk", "2 call(s)", "/state/logs/shell.log",
		"Permissions (3)", "kv.read, kv.write, process.spawn",
		"granted  SHELL_TOKEN", "missing  SHELL_PROXY",
		"Tasks (1)", "sweep", "every 1m, 4 run(s), last 30s ago; last error: disk full",
		"Surfaces", "none declared",
		"extension shell: running 1.2.0 after 1 restart(s) (extension_restarted)", "remedy read its log",
		"shell-sandbox: bwrap is not installed (sandbox_missing)", "remedy install bubblewrap",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the detail lacks %q:\n%s", want, s)
		}
	}
	// The daemon's own checks and another package's are not this one's.
	for _, not := range []string{"the store opens", "broken's disk check", "handshake timed out"} {
		if strings.Contains(s, not) {
			t.Errorf("the detail of shell shows %q:\n%s", not, s)
		}
	}
	h.key("esc")
	h.key("j")
	h.key("enter")
	s = h.waitShows("Doctor checks (2)")
	for _, want := range []string{"Package broken", "state    refused (handshake_failed)", "remedy   check the package's handshake",
		"executor broken", "operation broken.fix", "broken_disk: broken's disk check", "uptime -"} {
		if !strings.Contains(s, want) {
			t.Errorf("the detail of broken lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "none declared") || strings.Contains(s, "bwrap") {
		t.Errorf("the detail of broken shows shell's surfaces or checks:\n%s", s)
	}
}

func TestExtensionDetailSaysWhenTheDoctorFails(t *testing.T) {
	f := richFake()
	h := live(t, f, 160, 48)
	f.setDown(true)
	h.key("enter")
	h.waitShows("reading the doctor: no daemon answers")
}

func TestExtensionDetailScrollsWhenLongerThanTheHeight(t *testing.T) {
	f := richFake()
	for i := range 30 {
		f.exts[0].Tasks = append(f.exts[0].Tasks, client.Task{Name: fmt.Sprintf("task%02d", i), Every: 10})
	}
	h := live(t, f, 80, 24)
	h.key("enter")
	h.waitShows("Package shell")
	s := h.screen()
	if strings.Contains(s, "Doctor checks") || !strings.Contains(s, "lines 1-") {
		t.Fatalf("the long detail is not cut to the height with its place shown:\n%s", s)
	}
	h.press(tea.KeyEnd)
	s = h.waitShows("shell-sandbox")
	if strings.Contains(s, "title    Shell executor") {
		t.Fatalf("end did not scroll the top away:\n%s", s)
	}
	h.press(tea.KeyHome)
	s = h.waitShows("title    Shell executor")
	h.key("j")
	if s2 := h.screen(); strings.Contains(s2, "title    Shell executor") {
		t.Fatalf("down did not scroll by a line:\n%s", s2)
	}
	fits(t, h, "the scrolled detail", 80, 24)
}

func TestExtensionsFilterNarrowsTheList(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	for _, k := range []string{"/", "r", "e", "f"} {
		h.key(k)
	}
	s := h.waitShows("/ref")
	if !strings.Contains(s, "broken") || strings.Contains(s, "4242") {
		t.Fatalf("typing ref does not narrow the list to broken:\n%s", s)
	}
	// While typing, q is a letter, not quitting.
	if h.quits("q") {
		t.Fatal("q quit while the filter was typed")
	}
	h.press(tea.KeyBackspace)
	h.key("enter")
	h.waitShows("filter: ref")
	// The filter matches the state, the last error and the source too.
	for _, tc := range []struct{ query, shows, hides string }{
		{"installed", "broken", "4242"},
		{"timed out", "broken", "4242"},
		{"running", "4242", "handshake"},
		{"nothing-like-this", "no package matches", "4242"},
	} {
		h.key("/")
		h.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
		for _, r := range tc.query {
			h.key(string(r))
		}
		h.key("enter")
		s := h.waitShows(tc.shows)
		if strings.Contains(s, tc.hides) {
			t.Errorf("the filter %q shows %q:\n%s", tc.query, tc.hides, s)
		}
	}
	h.key("/")
	h.key("esc")
	s = h.waitShows("4242")
	if !strings.Contains(s, "broken") {
		t.Fatalf("esc did not clear the filter:\n%s", s)
	}
}

func TestWiderTerminalShowsMoreExtensionColumns(t *testing.T) {
	f := richFake()
	h := live(t, f, 80, 24)
	if s := h.screen(); strings.Contains(s, "UPTIME") || strings.Contains(s, "PERM") {
		t.Fatalf("80 columns show more than the basic columns:\n%s", s)
	}
	h.send(tea.WindowSizeMsg{Width: 130, Height: 24})
	s := h.screen()
	if !strings.Contains(s, "UPTIME") || !strings.Contains(s, "PERMS") || !strings.Contains(s, "5m") {
		t.Fatalf("130 columns lack the uptime and permission count:\n%s", s)
	}
	h.send(tea.WindowSizeMsg{Width: 200, Height: 24})
	if s := h.screen(); !strings.Contains(s, "kv.read,kv.write,process.spawn") {
		t.Fatalf("200 columns do not list the permissions:\n%s", s)
	}
}

func TestRestartAsksAndOnlyYesRestarts(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		detail       bool
		want         []string
		shows        string
	}{
		{"yes restarts", "y", false, []string{"shell"}, "shell is restarting"},
		{"yes restarts from the detail", "y", true, []string{"shell"}, "shell is restarting"},
		{"no keeps", "n", false, nil, "kept shell running"},
		{"esc keeps", "esc", true, nil, "kept shell running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			h := live(t, f, 80, 24)
			if tc.detail {
				h.key("enter")
				h.waitShows("Package shell")
			}
			h.key("r")
			h.waitShows("restart package shell? y to restart it")
			if h.quits("q") {
				t.Fatal("q quit while the question was open")
			}
			h.key("tab")
			h.waitShows("[Extensions]")
			h.key(tc.answer)
			h.waitShows(tc.shows)
			if got := f.restarted(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("restarted %v, want %v", got, tc.want)
			}
		})
	}
}

// restartAPI answers a restart as the daemon does when the new process
// came up, or failed.
type restartAPI struct {
	*fakeAPI
	res client.RestartResult
}

func (a restartAPI) Restart(ctx context.Context, name string, wait time.Duration) (client.RestartResult, error) {
	if _, err := a.fakeAPI.Restart(ctx, name, wait); err != nil {
		return client.RestartResult{}, err
	}
	return a.res, nil
}

func TestRestartShowsTheDaemonsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   client.RestartResult
		down  bool
		shows string
	}{
		{"running", client.RestartResult{Done: true, Extension: client.Extension{State: "running", PID: 777}}, false, "shell restarted: running, pid 777"},
		{"failed", client.RestartResult{Done: true, Extension: client.Extension{State: "refused", Code: "start_failed", LastError: "exec format error"}}, false,
			"shell restarted but is refused: start_failed exec format error"},
		{"refused", client.RestartResult{}, true, "restart shell: no daemon answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.feed <- client.Changes{Tick: 1, Changed: true}
			h := start(t, restartAPI{fakeAPI: f, res: tc.res}, 80, 24)
			h.waitShows("shell")
			f.setDown(tc.down)
			h.key("r")
			h.waitShows("restart package shell?")
			h.key("y")
			h.waitShows(tc.shows)
		})
	}
}

func TestLogsTailAppendsLinesAndFollows(t *testing.T) {
	f := newFake()
	f.appendLog("shell", "shell starting", "listening on stdin")
	h := live(t, f, 80, 24)
	h.key("l")
	s := h.waitShows("listening on stdin")
	if !strings.Contains(s, "[Logs]") || !strings.Contains(s, "log of shell") || !strings.Contains(s, "following") {
		t.Fatalf("l did not show shell's log, following:\n%s", s)
	}
	f.appendLog("shell", "ran job 1", "ran job 2\x1b[31m red\x1b[0m")
	s = h.waitShows("ran job 2 red")
	if strings.Contains(s, "\x1b[31m") {
		t.Fatalf("a line's escape sequence reached the screen: %q", s)
	}
	for i := range 40 {
		f.appendLog("shell", fmt.Sprintf("tick %02d", i))
	}
	s = h.waitShows("tick 39")
	if strings.Contains(s, "shell starting") {
		t.Fatalf("following the end still shows the first line:\n%s", s)
	}
	fits(t, h, "the Logs pane", 80, 24)
}

func TestLogsScrolledUpStopsFollowing(t *testing.T) {
	f := newFake()
	for i := range 60 {
		f.appendLog("shell", fmt.Sprintf("line %02d", i))
	}
	h := live(t, f, 80, 24)
	h.key("l")
	h.waitShows("line 59")
	h.key("k")
	s := h.waitShows("scrolled up, 1 line(s) below")
	if strings.Contains(s, "line 59") {
		t.Fatalf("up left the last line shown:\n%s", s)
	}
	f.appendLog("shell", "fresh line")
	h.waitShows("scrolled up, 2 line(s) below")
	if s := h.screen(); strings.Contains(s, "fresh line") {
		t.Fatalf("a scrolled-up log followed the new line:\n%s", s)
	}
	h.press(tea.KeyHome)
	h.waitShows("line 00")
	h.press(tea.KeyPgDown)
	if s := h.screen(); strings.Contains(s, "line 00") || !strings.Contains(s, "scrolled up") {
		t.Fatalf("page down did not move a page and stay scrolled:\n%s", s)
	}
	h.press(tea.KeyEnd)
	h.waitShows("fresh line")
	if s := h.screen(); !strings.Contains(s, "following") {
		t.Fatalf("end does not follow again:\n%s", s)
	}
	f.appendLog("shell", "after end")
	h.waitShows("after end")
}

func TestLogsFilterAndPackageCycling(t *testing.T) {
	f := newFake()
	f.appendLog("shell", "GET /a ok", "POST /b failed", "GET /c ok")
	f.appendLog("broken", "broken: handshake timed out")
	h := live(t, f, 80, 24)
	h.key("l")
	h.waitShows("GET /c ok")
	for _, k := range []string{"/", "f", "a", "i", "l", "enter"} {
		h.key(k)
	}
	s := h.waitShows("filter: fail")
	if !strings.Contains(s, "POST /b failed") || strings.Contains(s, "GET /a ok") {
		t.Fatalf("the filter does not narrow the log:\n%s", s)
	}
	h.key("/")
	h.key("esc")
	h.press(tea.KeyRight)
	s = h.waitShows("broken: handshake timed out")
	if !strings.Contains(s, "log of broken") || strings.Contains(s, "GET /a ok") {
		t.Fatalf("right did not change to broken's log alone:\n%s", s)
	}
	h.key("[")
	h.waitShows("GET /a ok")
	// The package left is no longer read: a line it gains is not shown.
	f.appendLog("broken", "broken: late line")
	f.appendLog("shell", "shell: later")
	s = h.waitShows("shell: later")
	if strings.Contains(s, "late line") {
		t.Fatalf("a read of the package left reached the screen:\n%s", s)
	}
}

func TestLogsFailedReadIsSaidAndRetried(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	// shell has no log in the fake yet: the daemon refuses the read.
	h.key("l")
	h.waitShows("reading the log of shell: no extension is named shell; trying again in 10ms")
	f.appendLog("shell", "now it is here")
	s := h.waitShows("now it is here")
	if strings.Contains(s, "trying again") {
		t.Fatalf("the failure stays shown after a read answered:\n%s", s)
	}
}

// gapAPI is the fake whose wire tap dropped its entries up to oldest.
type gapAPI struct {
	*fakeAPI
	oldest uint64
}

func (a *gapAPI) Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error) {
	p, err := a.fakeAPI.Wire(ctx, name, q)
	a.fakeAPI.mu.Lock()
	defer a.fakeAPI.mu.Unlock()
	p.Oldest = max(p.Oldest, a.oldest)
	return p, err
}

func wireEntry(seq uint64, dir, kind, method, id, msg string) client.WireEntry {
	return client.WireEntry{Seq: seq, Time: epoch, Direction: dir, Kind: kind, Method: method, ID: id, Size: len(msg), Message: msg}
}

func TestWireEntryExpandsToIndentedJSON(t *testing.T) {
	f := newFake()
	f.wire = map[string][]client.WireEntry{"shell": {
		wireEntry(1, client.WireToExtension, client.WireRequest, "initialize", "1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"version":1}}`),
		wireEntry(2, client.WireFromExtension, client.WireAnswer, "initialize", "1", `{"jsonrpc":"2.0","id":1,"result":{"name":"shell"}}`),
		wireEntry(3, client.WireFromExtension, client.WireNotification, "log.line", "", `not json at all`),
	}}
	f.wire["shell"][1].LatencyMicros = 2500
	f.wire["shell"][2].Cut, f.wire["shell"][2].Size = true, 9000
	h := live(t, f, 80, 24)
	h.key("w")
	s := h.waitShows("log.line")
	for _, want := range []string{"[Wire]", "wire tap of shell", "→ext", "←ext", "request", "answer", "2.5ms", "initialize"} {
		if !strings.Contains(s, want) {
			t.Errorf("the wire list lacks %q:\n%s", want, s)
		}
	}
	h.key("k")
	h.key("enter")
	s = h.waitShows(`"name": "shell"`)
	if !strings.Contains(s, "\n  \"result\": {") || !strings.Contains(s, "\n    \"name\": \"shell\"") {
		t.Fatalf("the answer is not indented JSON:\n%s", s)
	}
	if strings.Contains(s, "cut:") || strings.Contains(s, "redacted:") {
		t.Fatalf("a whole line says it was cut or redacted:\n%s", s)
	}
	h.key("esc")
	h.waitShows("log.line")
	h.key("j")
	h.key("enter")
	s = h.waitShows("not json at all")
	if !strings.Contains(s, "cut: the tap kept only the first 15 of 9000 bytes") {
		t.Fatalf("a cut line does not say so:\n%s", s)
	}
	fits(t, h, "a wire entry", 80, 24)
	h.key("esc")
	for _, k := range []string{"/", "l", "o", "g", "enter"} {
		h.key(k)
	}
	s = h.waitShows("filter: log")
	if strings.Contains(s, "initialize") || !strings.Contains(s, "log.line") {
		t.Fatalf("the method filter does not narrow the list:\n%s", s)
	}
}

func TestWireFollowsNewEntriesAndShowsAGap(t *testing.T) {
	f := newFake()
	f.wire = map[string][]client.WireEntry{"shell": {
		wireEntry(1, client.WireToExtension, client.WireRequest, "initialize", "1", `{}`),
	}}
	api := gapAPI{fakeAPI: f}
	f.feed <- client.Changes{Tick: 1, Changed: true}
	h := start(t, &api, 80, 24)
	h.waitShows("shell")
	h.key("w")
	h.waitShows("initialize")
	f.mu.Lock()
	api.oldest = 5
	f.wire["shell"] = append(f.wire["shell"], wireEntry(5, client.WireToExtension, client.WireRequest, "operation.call", "9", `{}`))
	f.mu.Unlock()
	s := h.waitShows("operation.call")
	if !strings.Contains(s, "3 line(s) dropped") {
		t.Fatalf("the entries 2 to 4 the tap dropped show no gap:\n%s", s)
	}
	if strings.Index(s, "initialize") > strings.Index(s, "dropped") || strings.Index(s, "dropped") > strings.Index(s, "operation.call") {
		t.Fatalf("the gap is not between the entries:\n%s", s)
	}
}

func TestWireStartsOverWhenTheDaemonRestarted(t *testing.T) {
	f := newFake()
	f.wire = map[string][]client.WireEntry{"shell": {
		wireEntry(1, client.WireToExtension, client.WireRequest, "initialize", "1", `{}`),
		wireEntry(2, client.WireToExtension, client.WireRequest, "configure", "2", `{}`),
		wireEntry(3, client.WireToExtension, client.WireRequest, "route.match", "3", `{}`),
	}}
	h := live(t, f, 80, 24)
	h.waitShows("shell")
	h.key("w")
	h.waitShows("route.match")
	// A new daemon: its tap numbers from 1 again, below the pane's cursor.
	f.mu.Lock()
	f.wire["shell"] = []client.WireEntry{wireEntry(1, client.WireToExtension, client.WireRequest, "shutdown", "1", `{}`)}
	f.mu.Unlock()
	s := h.waitShows("shutdown")
	if !strings.Contains(s, "the daemon restarted") || strings.Index(s, "restarted") > strings.Index(s, "shutdown") {
		t.Fatalf("the new daemon's entries show without the restart marked before them:\n%s", s)
	}
}

func TestWireOfTheRedactedLineSaysSo(t *testing.T) {
	f := newFake()
	e := wireEntry(1, client.WireToExtension, client.WireAnswer, "secret.resolve", "4", `{"jsonrpc":"2.0","id":4,"result":"[redacted]"}`)
	e.Redacted = true
	f.wire = map[string][]client.WireEntry{"broken": {e}}
	h := live(t, f, 80, 24)
	h.key("j")
	h.key("w")
	h.waitShows("secret.resolve")
	h.key("enter")
	h.waitShows("redacted: a secret's value was replaced")
}

// reloadAPI answers a reload as given.
type reloadAPI struct {
	*fakeAPI
	res client.Applied
}

func (a reloadAPI) ReloadConfig(ctx context.Context) (client.Applied, error) {
	if _, err := a.fakeAPI.ReloadConfig(ctx); err != nil {
		return client.Applied{}, err
	}
	return a.res, nil
}

func TestApplyAsksAndReports(t *testing.T) {
	f := newFake()
	h := live(t, f, 80, 24)
	h.key("tab") // any pane: the Work pane
	h.waitShows("deploy the website")
	h.key("A")
	h.waitShows("apply the config file again? y to apply it, n to keep the live config")
	if h.quits("q") {
		t.Fatal("q quit while the question was open")
	}
	h.key("tab")
	h.key("n")
	s := h.waitShows("kept the live config")
	if f.reloaded() != 0 || !strings.Contains(s, "[Work]") {
		t.Fatalf("n applied (%d reloads) or tab moved the pane:\n%s", f.reloaded(), s)
	}
	h.key("A")
	h.waitShows("apply the config file again?")
	h.key("y")
	h.waitShows("config applied: generation 2")
	if f.reloaded() != 1 {
		t.Fatalf("y made %d reloads, want 1", f.reloaded())
	}
	// The answer goes once the operator moves on.
	h.key("j")
	if s := h.screen(); strings.Contains(s, "config applied") {
		t.Fatalf("the answer outlived the next key:\n%s", s)
	}
}

func TestApplyReportsUnchangedAndNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   client.Applied
		down  bool
		shows string
	}{
		{"unchanged", client.Applied{Unchanged: true, Generation: 4}, false, "config file unchanged; generation 4 stays"},
		{"problems", client.Applied{Problems: []client.Problem{
			{Path: "/scopes/0/entries/0/config", Message: "colour is not a field of hello"},
			{Path: "/scopes/1", Message: "second"},
		}}, false, "config not applied: 2 problem(s), first /scopes/0/entries/0/config: colour is not a field of hello"},
		{"refused", client.Applied{Refused: []client.Refusal{{Extension: "hello", Code: "invalid_config", Message: "no colour"}}}, false,
			"config not applied: refused by hello (invalid_config): no colour"},
		{"error", client.Applied{}, true, "apply: no daemon answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.feed <- client.Changes{Tick: 1, Changed: true}
			h := startWith(t, reloadAPI{fakeAPI: f, res: tc.res}, Options{Retry: time.Hour, Now: func() time.Time { return epoch }}, 160, 24)
			h.waitShows("shell")
			f.setDown(tc.down)
			h.key("A")
			h.waitShows("apply the config file again?")
			h.key("y")
			h.waitShows(tc.shows)
		})
	}
}

func TestNewViewsFitTheTerminal(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		f := richFake()
		f.exts[1].Remedy = strings.Repeat("a long remedy ", 30)
		for i := range 80 {
			f.appendLog("shell", fmt.Sprintf("line %d %s", i, strings.Repeat("wide ", 50)))
		}
		long := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 500) + `"}}`
		f.wire = map[string][]client.WireEntry{"shell": {
			wireEntry(1, client.WireFromExtension, client.WireAnswer, strings.Repeat("method.", 20), "1", long),
		}}
		h := live(t, f, size.w, size.h)
		steps := []struct {
			what  string
			keys  []string
			shows string
		}{
			{"the list", nil, "shell"},
			{"the filter typed", []string{"/", "s"}, "/s"},
			{"the filter kept", []string{"enter"}, "filter: s"},
			{"the detail", []string{"/", "esc", "j", "enter"}, "Package broken"},
			{"the restart question", []string{"r"}, "restart package broken?"},
			{"the apply question", []string{"n", "A"}, "apply the config file again?"},
			{"the Logs pane", []string{"n", "esc", "k", "l"}, "line 79"},
			{"the Logs pane scrolled", []string{"k"}, "scrolled up"},
			{"the Wire pane", []string{"tab"}, "[Wire]"},
			{"the Wire pane's package", nil, "method.method"},
			{"a wire entry", []string{"enter"}, "xxxx"},
		}
		for _, st := range steps {
			for _, k := range st.keys {
				h.key(k)
			}
			h.waitShows(st.shows)
			fits(t, h, st.what, size.w, size.h)
		}
	}
}
