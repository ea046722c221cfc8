package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// notesToken is the bearer token of the notes entry; serve reads it from
// OC_TEST_NOTES through the scope's secret reference.
const notesToken = "notes-tok-82e1"

// notesConfig is one scope team with a notes entry selecting the token
// secret, and the notes route.
const notesConfig = `{"scopes": [{"id": "team",
  "entries": [{"name": "book", "type": "notes", "secrets": ["token"]}],
  "secret_refs": {"token": "env:OC_TEST_NOTES"},
  "routes": [{"handler": "notes"}]}]}`

// postNote posts body to the team/book entry with auth as its
// Authorization header (none when empty) and returns the status.
func postNote(t *testing.T, base, body, auth string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/notes/team/book", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// noteEvents is every notes.added Event in team.
func noteEvents(t *testing.T, e *daemontest.Env) []protocol.Event {
	t.Helper()
	page, err := e.C.Events(context.Background(), client.EventsQuery{Scope: "team", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Event
	for _, ev := range page.Events {
		if ev.Type == notes.Added {
			out = append(out, ev)
		}
	}
	return out
}

// TestRealBinaryNotesWebhookMakesAThreadWorkASecondNoteJoins: on the real
// binary serving the bundled notes package, a note without the entry's
// token is refused 401 and a bad body 400, each with nothing accepted; a
// note with it is accepted and becomes a notes.thread Work titled by its
// thread, which a second note on the thread joins, while a note on
// another thread makes its own.
func TestRealBinaryNotesWebhookMakesAThreadWorkASecondNoteJoins(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(notesConfig)
	e.Launch("", []string{"OC_TEST_NOTES=" + notesToken}, "--config", e.Config)
	var st client.Status
	e.Eventually("the daemon running with its webhook listener", func() bool {
		var err error
		st, err = e.C.Status(context.Background())
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning && st.Webhooks != ""
	})
	if x := e.Extension(notes.Name); x.State != "running" || x.Version != "3.0.0" {
		t.Fatalf("the notes package is %+v, want 3.0.0 running\n%s", x, e.Log)
	}
	base := "http://" + st.Webhooks
	first := `{"id":"n-1","thread":"release","text":"cut the branch"}`
	for _, tc := range []struct {
		name, body, auth string
		status           int
	}{
		{"no token", first, "", http.StatusUnauthorized},
		{"another token", first, "Bearer nope", http.StatusUnauthorized},
		{"no thread", `{"id":"n-1","text":"x"}`, "Bearer " + notesToken, http.StatusBadRequest},
	} {
		if got := postNote(t, base, tc.body, tc.auth); got != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.name, got, tc.status)
		}
	}
	if evs := noteEvents(t, e); len(evs) != 0 {
		t.Fatalf("refused notes were accepted: %+v", evs)
	}
	for _, body := range []string{first, `{"id":"n-2","thread":"release","text":"!the build is red"}`, `{"id":"n-3","thread":"ops","text":"disk at 80%"}`} {
		if got := postNote(t, base, body, "Bearer "+notesToken); got != http.StatusAccepted {
			t.Fatalf("a note with its token: status %d, want 202\n%s", got, e.Log)
		}
	}
	evs := noteEvents(t, e)
	if len(evs) != 3 || evs[0].Source != "notes/team/book" || evs[0].DeliveryID != "n-1" {
		t.Fatalf("after three 202s: %+v", evs)
	}
	var works client.WorkList
	e.Eventually("three notes routed to two thread Work", func() bool {
		var err error
		works, err = e.C.Works(context.Background(), client.WorkQuery{Scope: "team"})
		n := 0
		for _, w := range works.Work {
			n += len(w.Inputs)
		}
		return err == nil && len(works.Work) == 2 && n == 3
	})
	byTitle := map[string]client.Work{}
	for _, w := range works.Work {
		if w.Kind != notes.ThreadKind || w.Display == nil {
			t.Fatalf("work %+v, want a %s with a display", w, notes.ThreadKind)
		}
		byTitle[w.Display.Title] = w
	}
	rel, ops := byTitle["release"], byTitle["ops"]
	if len(rel.Inputs) != 2 || rel.Inputs[0] != evs[0].ID || rel.Trigger != evs[0].ID || strings.Join(rel.Keys, ",") != "notes:release" {
		t.Fatalf("the release thread's Work %+v, want both its notes, started by the first", rel)
	}
	if len(ops.Inputs) != 1 || strings.Join(ops.Keys, ",") != "notes:ops" {
		t.Fatalf("the ops thread's Work %+v", ops)
	}
	if strings.Contains(e.Log.String(), notesToken) {
		t.Fatal("the daemon's log holds the notes token")
	}
}

// buildNotesReleases builds the notes package's binary once per release
// into dir, each laid out as a package directory named notes (its
// manifest as the binary prints it), and returns the directories.
func buildNotesReleases(t *testing.T) [3]string {
	t.Helper()
	var dirs [3]string
	root := t.TempDir()
	for i := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("r%d", i+1), notes.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(dir, "notes-extension")
		cmd := exec.Command("go", "build", "-ldflags", fmt.Sprintf("-X main.release=%d", i+1), "-o", exe,
			"github.com/open-conduit/open-conduit/extensions/notes/cmd/notes-extension")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building notes release %d (the test needs the go command): %v\n%s", i+1, err, out)
		}
		m, err := exec.Command(exe, "package-manifest").Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), m, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[i] = dir
	}
	return dirs
}

// occ runs the open-conduit command with the env's state (and config,
// for the installer's commands) and returns its stdout, stderr and exit
// code.
func occ(t *testing.T, e *daemontest.Env, args ...string) (string, string, int) {
	t.Helper()
	args = append(args, "--state", e.State)
	if args[0] == "extension" && args[1] != "call" {
		args = append(args, "--config", e.Config)
	}
	cmd := exec.Command(bins.OpenConduit, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// occOK runs the command and fails the test unless it exits 0.
func occOK(t *testing.T, e *daemontest.Env, args ...string) string {
	t.Helper()
	out, errOut, code := occ(t, e, args...)
	if code != 0 {
		t.Fatalf("%v exited %d\n%s%s\n%s", args, code, out, errOut, e.Log)
	}
	return out
}

// readThread is a thread's notes as extension call notes.read prints them.
func readThread(t *testing.T, e *daemontest.Env, thread string) []notes.Entry {
	t.Helper()
	out := occOK(t, e, "extension", "call", notes.Name, notes.Read, "--input", `{"thread":"`+thread+`"}`)
	var res notes.ReadOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("notes.read printed %q: %v", out, err)
	}
	return res.Notes
}

// TestRealBinaryNotesUpgradesAcrossThreeReleasesAndRefusesARollback: the
// notes package installed at release 1, written to, then updated to
// release 2 and 3 on a running daemon: after each update the daemon serves
// the new release, which migrated the KV, and the notes release 1 wrote
// read back intact (with those written since). A rollback to release 2
// over layout 3 is refused by the daemon with kv_downgrade.
func TestRealBinaryNotesUpgradesAcrossThreeReleasesAndRefusesARollback(t *testing.T) {
	dirs := buildNotesReleases(t)
	e := daemontest.New(t, bins)
	e.WriteConfig(`{"scopes": [{"id": "team", "entries": [{"name": "book", "type": "notes"}]}]}`)
	occOK(t, e, "extension", "install", dirs[0])
	e.Start()
	var want []string
	write := func(thread, text string) {
		t.Helper()
		out := occOK(t, e, "extension", "call", notes.Name, notes.Write, "--input", `{"thread":"`+thread+`","text":"`+text+`"}`)
		var w notes.WriteOutput
		if err := json.Unmarshal([]byte(out), &w); err != nil || w.ID == "" {
			t.Fatalf("notes.write printed %q: %v", out, err)
		}
		want = append(want, w.ID+"="+text)
	}
	check := func(version string) {
		t.Helper()
		if x := e.Extension(notes.Name); x.State != "running" || x.Version != version {
			t.Fatalf("the daemon runs notes %+v, want %s running\n%s", x, version, e.Log)
		}
		var got []string
		for _, n := range readThread(t, e, "plans") {
			got = append(got, n.ID+"="+n.Text)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("under %s thread plans reads %v, want %v", version, got, want)
		}
	}
	write("plans", "first")
	write("plans", "second")
	check("1.0.0")
	occOK(t, e, "extension", "update", dirs[1])
	check("2.0.0")
	write("plans", "third")
	occOK(t, e, "extension", "update", dirs[2])
	check("3.0.0")
	write("plans", "fourth")
	check("3.0.0")

	out, errOut, code := occ(t, e, "extension", "rollback", notes.Name)
	if code != 1 || !strings.Contains(out+errOut, protocol.CodeKVDowngrade) {
		t.Fatalf("a rollback over layout 3: exit %d\n%s%s", code, out, errOut)
	}
	if x := e.Extension(notes.Name); x.Code != protocol.CodeKVDowngrade || x.Version != "2.0.0" {
		t.Fatalf("the rolled-back notes in the daemon: %+v, want 2.0.0 refused kv_downgrade", x)
	}
	occOK(t, e, "extension", "rollback", notes.Name)
	check("3.0.0")
}
