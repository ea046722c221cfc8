package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
)

// printed runs a table function and returns what it wrote.
func printed(t *testing.T, table func(w io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := table(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestEmitPrintsJSONOrTheTableFromOneValue(t *testing.T) {
	v := client.Rescan{Added: []string{"notes"}}
	table := func(w io.Writer) error { return writeRescan(w, v) }
	for _, asJSON := range []bool{true, false} {
		var out bytes.Buffer
		r := &runner{stdout: &out, asJSON: asJSON}
		if err := r.emit(v, table); err != nil {
			t.Fatal(err)
		}
		var back client.Rescan
		err := json.Unmarshal(out.Bytes(), &back)
		if asJSON && (err != nil || back.Added[0] != "notes") {
			t.Errorf("--json printed %q: %v", out.String(), err)
		}
		if !asJSON && (err == nil || !strings.Contains(out.String(), "added    notes")) {
			t.Errorf("the table printed %q", out.String())
		}
	}
}

func TestEventTimesCarryTheirZoneOffset(t *testing.T) {
	at := time.Date(2026, 11, 30, 18, 31, 48, 0, time.UTC)
	out := printed(t, func(w io.Writer) error {
		return writeEvents(w, client.Events{Events: []protocol.Event{{Sequence: 7, Time: at, Scope: "demo", Type: "hello.greeted", ID: "ev_1"}}}, true)
	})
	m := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d`).FindString(out)
	if m == "" {
		t.Fatalf("no time with an offset in:\n%s", out)
	}
	back, err := time.Parse(timeLayout, m)
	if err != nil || !back.Equal(at) {
		t.Fatalf("%q reads back as %v (%v), want %v", m, back, err, at)
	}
	if timeText(time.Time{}) != "-" {
		t.Errorf("no time is %q", timeText(time.Time{}))
	}
}

func TestEventsMoreHintKeepsEveryFlagGiven(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cwd, _ = filepath.Abs(".")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--after", "100", "--limit", "50", "--scope", "demo", "--state", "st"},
			"open-conduit events list --after 200 --limit 50 --scope demo --state " + filepath.Join(cwd, "st")},
		{[]string{"--state=/srv/oc"}, "open-conduit events list --after 200 --state /srv/oc"},
		{[]string{"--scope", "team a", "--json=false"}, "open-conduit events list --after 200 --json=false --scope 'team a'"},
		{nil, "open-conduit events list --after 200"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			inv, err := parse(append([]string{"events", "list"}, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			r, err := inv.runner(context.Background(), io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.rerun(map[string]string{"after": "200"}); got != c.want {
				t.Fatalf("hint\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestStatusSaysPhaseUptimeConfigAndPackages(t *testing.T) {
	started := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	s := client.Status{Version: "1.2.0", PID: 4242, Started: started, State: "/srv/oc", Phase: client.PhaseRunning,
		Config: "/etc/oc/config.json", ConfigFile: "/etc/oc/config.json", Generation: 3, Hash: "abc123", Extensions: 3, Running: 2, Webhooks: "127.0.0.1:8123"}
	out := printed(t, func(w io.Writer) error { return writeStatus(w, s, started.Add(90*time.Minute+4*time.Second)) })
	for _, want := range []string{"phase        running", "pid          4242", "uptime       1h30m4s (since ", "state dir    /srv/oc",
		"config from  /etc/oc/config.json", "config file  /etc/oc/config.json", "generation   3 (hash abc123)", "extensions   2 of 3 running",
		"webhooks     http://127.0.0.1:8123"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	// Negative control: a daemon that has not said is not shown as a value.
	out = printed(t, func(w io.Writer) error { return writeStatus(w, client.Status{}, started) })
	if !strings.Contains(out, "phase        -") || !strings.Contains(out, "uptime       -") {
		t.Errorf("an empty status:\n%s", out)
	}
}

func TestExtensionListShowsTheStateCodeAndLog(t *testing.T) {
	l := listing{Extensions: []listed{
		{Extension: client.Extension{Name: "hello", Version: "0.2.0", Source: "bundled", State: "running", PID: 42, Log: "/srv/oc/logs/extensions/hello.log"},
			Protocols: []int{1}, Provides: "1 operation"},
		{Extension: client.Extension{Name: "notes", Source: "installed", State: "refused", Code: "handshake_failed", LastError: "exited during initialize\nmore", Log: "/srv/oc/logs/extensions/notes.log"},
			Protocols: []int{1, 2}, Kept: "0.9.0"},
	}, Conflicts: []discover.Conflict{{Kind: "operation", Name: "notes.add", Owners: []string{"notes", "jot"}}}}
	out := printed(t, func(w io.Writer) error { return writeExtensions(w, l) })
	lines := strings.Split(out, "\n")
	if !regexp.MustCompile(`^NAME\s+VERSION\s+SOURCE\s+STATE\s+CODE\s+PID\s+RESTARTS\s+PROTOCOL\s+PROVIDES\s+PERMISSIONS\s+KEPT\s+LOG\s+LAST ERROR$`).MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	if !regexp.MustCompile(`^hello\s+0.2.0\s+bundled\s+running\s+-\s+42\s+0\s+1\s+1 operation\s+-\s+-\s+/srv/oc/logs/extensions/hello.log\s+-$`).MatchString(lines[1]) {
		t.Errorf("running row %q", lines[1])
	}
	if !regexp.MustCompile(`^notes\s+-\s+installed\s+refused\s+handshake_failed\s+-\s+0\s+1,2\s+-\s+-\s+0.9.0\s+/srv/oc/logs/extensions/notes.log\s+exited during initialize$`).MatchString(lines[2]) {
		t.Errorf("refused row %q", lines[2])
	}
	if !strings.Contains(out, `conflict: operation "notes.add" is claimed by notes and jot (registration_conflict)`) {
		t.Errorf("the conflict is not listed:\n%s", out)
	}
}

func TestRestartSaysTheNewStateOrTheFailure(t *testing.T) {
	cases := []struct {
		name string
		res  client.RestartResult
		want []string
		not  []string
	}{
		{"running", client.RestartResult{Done: true, Extension: client.Extension{Name: "hello", State: "running", PID: 4242, Protocol: 1}},
			[]string{"hello: running, pid 4242 (protocol 1)"}, []string{"remedy"}},
		{"failed with a code", client.RestartResult{Done: true, Extension: client.Extension{Name: "notes", State: "refused", Code: "handshake_failed",
			LastError: "exited during initialize", Remedy: "Read the log", Log: "/srv/oc/logs/extensions/notes.log"}},
			[]string{"notes: refused handshake_failed: exited during initialize", "  remedy: Read the log", "  log: /srv/oc/logs/extensions/notes.log"}, []string{"pid"}},
		{"not done within the wait", client.RestartResult{Extension: client.Extension{Name: "slow", State: "starting"}},
			[]string{"slow: starting, not running after 30s"}, []string{"remedy"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := printed(t, func(w io.Writer) error { return writeRestart(w, c.res, 30*time.Second) })
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("has %q:\n%s", n, out)
				}
			}
		})
	}
}

func TestRescanListsEveryKindOfChange(t *testing.T) {
	res := client.Rescan{Added: []string{"notes", "weather"}, Changed: []string{"hello"},
		Skipped: []client.Skipped{{Dir: "/etc/oc/extensions/bad", Code: "invalid_package", Message: "no manifest"}},
		Refused: []client.Refusal{{Extension: "dup", Code: "registration_conflict", Message: "claims hello.greet"}}}
	out := printed(t, func(w io.Writer) error { return writeRescan(w, res) })
	for _, want := range []string{"added    notes, weather", "changed  hello", "removed  -",
		"skipped  /etc/oc/extensions/bad: no manifest (invalid_package)", "refused  dup: claims hello.greet (registration_conflict)", "extension restart NAME"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	out = printed(t, func(w io.Writer) error { return writeRescan(w, client.Rescan{}) })
	if strings.Contains(out, "restart") {
		t.Errorf("nothing changed, yet a restart is suggested:\n%s", out)
	}
}

func TestDoctorPrintsTheRemedyUnderAFailingCheck(t *testing.T) {
	doc := client.Doctor{Checks: []client.Check{
		{Name: "store", Status: "ok", Detail: "fine"},
		{Name: "extension notes", Status: "fail", Code: "handshake_failed", Detail: "exited", Remedy: "read the package's log (open-conduit logs notes)"},
		{Name: "config", Status: "warn", Code: "config_warnings", Detail: "1 warning"},
	}}
	out := printed(t, func(w io.Writer) error { return writeDoctor(w, doc) })
	if !strings.Contains(out, "fail extension notes: exited [handshake_failed]\n     remedy: read the package's log (open-conduit logs notes)\n") {
		t.Errorf("the remedy is not on the line after its check:\n%s", out)
	}
	if strings.Count(out, "remedy:") != 1 {
		t.Errorf("a remedy where the daemon gave none:\n%s", out)
	}
}

func TestConfigApplySaysUnchangedAppliedOrWhy(t *testing.T) {
	cases := []struct {
		name string
		res  client.Applied
		want string
	}{
		{"unchanged", client.Applied{Unchanged: true, Generation: 4, Hash: "abc"}, "no changes (generation 4)\n"},
		{"applied and written", client.Applied{Applied: true, Generation: 5, Hash: "def", File: "/etc/oc/config.json"},
			"applied generation 5 (hash def), written to /etc/oc/config.json\n"},
		{"refused", client.Applied{Problems: []client.Problem{{Path: "/scopes/0/id", Code: "invalid", Severity: "error", Message: "say an id"}},
			Refused: []client.Refusal{{Extension: "hello", Code: "configure_refused", Message: "no"}}},
			"error /scopes/0/id: say an id (invalid)\nrefused by hello: no (configure_refused)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out := printed(t, func(w io.Writer) error { return writeApplied(w, c.res) }); out != c.want {
				t.Fatalf("got %q, want %q", out, c.want)
			}
		})
	}
}

func TestConfigShowPrintsTheTextAloneOnStdout(t *testing.T) {
	v := client.ConfigView{Generation: 2, Hash: "abc", Source: "/etc/oc/config.json", File: "/etc/oc/config.json", Text: `{"scopes":[]}`}
	var about bytes.Buffer
	out := printed(t, func(w io.Writer) error { return writeConfigView(w, &about, v) })
	if out != "{\"scopes\":[]}\n" || !strings.Contains(about.String(), "generation 2 (hash abc) from /etc/oc/config.json") {
		t.Fatalf("stdout %q, about %q", out, about.String())
	}
}

func TestLogFollowMarksALogThatStartedOver(t *testing.T) {
	cases := []struct {
		name string
		log  client.Log
		want string
	}{
		{"lines", client.Log{Extension: "hello", Lines: []string{"a", "b"}}, "a\nb\n"},
		{"started over", client.Log{Extension: "hello", Lines: []string{"c"}, Reset: true},
			"--- hello's log started over (it is bounded); the lines below are from its top ---\nc\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out := printed(t, func(w io.Writer) error { return writeLog(w, c.log) }); out != c.want {
				t.Fatalf("got %q, want %q", out, c.want)
			}
		})
	}
}

func TestServeLogsWhatAReloadDid(t *testing.T) {
	cases := []struct {
		name string
		res  client.Applied
		err  error
		want []string
	}{
		{"applied", client.Applied{Applied: true, Generation: 3, File: "/etc/oc/config.json"}, nil,
			[]string{`level=INFO msg="config reload: applied" generation=3`}},
		{"unchanged", client.Applied{Unchanged: true, Generation: 3}, nil, []string{`msg="config reload: no changes" generation=3`}},
		{"problems keep the generation", client.Applied{Problems: []client.Problem{
			{Path: "/scopes/0/entries/0/config", Code: "invalid_config", Severity: "error", Message: "takes only greeting"},
			{Path: "/settings", Code: "unknown_package", Severity: "warning", Message: "no such package"}}}, nil,
			[]string{`level=ERROR msg="config problem" path=/scopes/0/entries/0/config code=invalid_config`,
				`level=WARN msg="config problem" path=/settings code=unknown_package`,
				`level=ERROR msg="config reload: not applied; the running generation stays" errors=1`}},
		{"a failure", client.Applied{}, context.DeadlineExceeded, []string{`level=ERROR msg="config reload failed; the running generation stays"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			logReload(slog.New(slog.NewTextHandler(&b, nil)), c.res, c.err)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("the log lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}
