package drills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/extensions/shell"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// The running-Work drills: a signed webhook delivery becomes Work that the
// shell executor runs as a real script, which calls operations and the
// builtin wait through `open-conduit call`; the drills check what the
// operator sees, that a retried operation takes effect once, that a
// settled execution's token is dead, and that a script outlives a crash of
// the shell package or of the daemon and is re-adopted, not run again.

// runConfig is scope acme with the signed webhook entry of signedConfig
// routed to the binding run, whose executor is shell running %[1]s (a
// JSON string) and which grants the builtins the scripts call and the
// notes operations. The notes entry runs the notes package, whose
// operations the scripts call.
const runConfig = `{
  "scopes": [{
    "id": "acme",
    "entries": [{"name": "issues", "type": "webhook", "connection": "hooks",
                 "config": {"key_pointer": "/issue/id", "title_pointer": "/issue/title"}},
                {"name": "book", "type": "notes"}],
    "routes": [{"handler": "webhook", "binding": "run"}],
    "bindings": [{"name": "run", "executor": "shell", "config": {"command": %[1]s, "timeout_seconds": 600},
                  "operations": ["read_context", "wait", "notes.write", "notes.read"]}],
    "connections": ["hooks"]
  }],
  "connections": [{"name": "hooks", "type": "webhook-signing", "secret_refs": {"secret": "env:OC_TEST_HOOK"}}]
}`

// scriptPrologue starts every drill script: it stops at the first failing
// command, names the drill's directory D, and records its pid in D/pids so
// the drill's cleanup ends whatever is left of it. gofor waits for a file
// the drill creates.
const scriptPrologue = `set -e
D=%[1]s
echo $$ >> "$D/pids"
gofor() { while [ ! -e "$D/$1" ]; do sleep 0.05; done; }
`

// runRig is a daemon whose binding runs a drill script, with the
// directory the script and the drill share.
type runRig struct {
	t    *testing.T
	e    *daemontest.Env
	dir  string
	base string
	env  []string
}

// startRunRig writes script (after scriptPrologue) into a directory of the
// test's, configures runConfig to run it and starts serve.
func startRunRig(t *testing.T, script string) *runRig {
	t.Helper()
	if _, err := os.Stat(shell.DefaultShell); err != nil {
		t.Skipf("the shell executor needs %s: %v", shell.DefaultShell, err)
	}
	r := &runRig{t: t, dir: t.TempDir(), env: []string{"OC_TEST_HOOK=" + signedSecret}}
	// Registered before the daemon's, so it runs after the daemon was
	// killed: no script starts after it looked.
	t.Cleanup(r.killScripts)
	e := daemontest.New(t, bins)
	r.e = e
	path := filepath.Join(r.dir, "script.sh")
	text := fmt.Sprintf(scriptPrologue, shQuote(r.dir)) + script
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, err := json.Marshal(shell.DefaultShell + " " + shQuote(path))
	if err != nil {
		t.Fatal(err)
	}
	e.WriteConfig(fmt.Sprintf(runConfig, cmd))
	r.launch()
	return r
}

// launch runs serve on the rig's config and state and waits for its
// webhook listener.
func (r *runRig) launch() {
	r.t.Helper()
	r.e.Launch("", r.env, "--config", r.e.Config)
	r.base = "http://" + webhookAddr(r.e)
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// killScripts ends the process group of every process still running a
// script of the rig (its command line names the rig's directory), so no
// drill leaves one behind: they run detached from the daemon on purpose.
// A pid the scripts recorded counts too, should one have exec'd another
// program.
func (r *runRig) killScripts() {
	pids := r.scriptPIDs()
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if cmd, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline"); err == nil && bytes.Contains(cmd, []byte(r.dir)) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// scriptPIDs are the pids the rig's scripts recorded.
func (r *runRig) scriptPIDs() []int {
	data, _ := os.ReadFile(filepath.Join(r.dir, "pids"))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// touch creates a file the script waits for.
func (r *runRig) touch(name string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), nil, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// read is a file the script wrote, waited for until it is there and ends
// in a newline.
func (r *runRig) read(name string) string {
	r.t.Helper()
	var data []byte
	r.e.Eventually("the script writing "+name, func() bool {
		var err error
		data, err = os.ReadFile(filepath.Join(r.dir, name))
		return err == nil && bytes.HasSuffix(data, []byte("\n"))
	})
	return string(data)
}

// deliver posts a signed delivery of issue n under delivery ID id and
// returns its one Event and the Work it was routed to.
func (r *runRig) deliver(id string, n int) (protocol.Event, string) {
	r.t.Helper()
	return r.deliverTitled(id, n, fmt.Sprintf("drill %d", n))
}

// deliverTitled is deliver of an issue titled title.
func (r *runRig) deliverTitled(id string, n int, title string) (protocol.Event, string) {
	r.t.Helper()
	body := fmt.Sprintf(`{"issue":{"id":%d,"title":%q}}`, n, title)
	if got := postSigned(r.t, r.base, body, signedSecret, id); got != http.StatusAccepted {
		r.t.Fatalf("a signed delivery: status %d, want 202\n%s", got, r.e.Log)
	}
	evs := eventsOf(r.t, r.e, "acme", id)
	if len(evs) != 1 {
		r.t.Fatalf("delivery %s is in the log %d times, want once", id, len(evs))
	}
	d := waitRouted(r.t, r.e, evs[0].ID)
	if !d.Created {
		r.t.Fatalf("the delivery's Event did not create its Work: %+v", d)
	}
	return evs[0], d.Work
}

// detail is the Work as work show reads it.
func (r *runRig) detail(work string) client.WorkDetail {
	r.t.Helper()
	d, err := r.e.C.WorkDetail(context.Background(), work)
	if err != nil {
		r.t.Fatalf("work %s: %v", work, err)
	}
	return d
}

// waitState waits until the Work is in state and returns it.
func (r *runRig) waitState(work, state string) client.WorkDetail {
	r.t.Helper()
	var d client.WorkDetail
	r.e.Eventually("work "+work+" "+state, func() bool {
		d = r.detail(work)
		return d.Work.State == state
	})
	return d
}

// waitRunning waits until the Work's attempt-th execution runs and the
// Work is running.
func (r *runRig) waitRunning(work string, attempt int) client.Execution {
	r.t.Helper()
	var x client.Execution
	r.e.Eventually(fmt.Sprintf("work %s running attempt %d", work, attempt), func() bool {
		d := r.detail(work)
		if d.Work.State != "running" || len(d.Executions) != attempt {
			return false
		}
		x = d.Executions[attempt-1]
		return x.State == "running" && x.Attempt == attempt
	})
	return x
}

// thread is a thread's notes, read through notes.read as the operator.
func (r *runRig) thread(name string) []notes.Entry {
	r.t.Helper()
	res, err := r.e.C.Call(context.Background(), notes.Name, client.CallRequest{Operation: notes.Read, Scope: "acme", Input: map[string]any{"thread": name}})
	if err != nil || res.Code != "" {
		r.t.Fatalf("notes.read: %v %s %s", err, res.Code, res.Message)
	}
	var out notes.ReadOutput
	if err := json.Unmarshal(res.Output.Data, &out); err != nil {
		r.t.Fatal(err)
	}
	return out.Notes
}

// output is the content of the execution's committed artifact name.
func (r *runRig) output(work, execution, name string) string {
	r.t.Helper()
	ctx := context.Background()
	var id string
	r.e.Eventually("the "+name+" artifact of "+execution, func() bool {
		arts, err := r.e.C.WorkArtifacts(ctx, work)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, a := range arts.Artifacts {
			if a.Execution == execution && a.Name == name {
				id = a.ID
			}
		}
		return id != ""
	})
	var b strings.Builder
	if _, _, err := r.e.C.ArtifactContent(ctx, id, &b); err != nil {
		r.t.Fatalf("artifact %s: %v", id, err)
	}
	return b.String()
}

// callAnswer is what `open-conduit call --json` prints.
type callAnswer struct {
	Output    jsontext.Value `json:"output"`
	Replayed  bool           `json:"replayed"`
	RequestID string         `json:"request_id"`
	Error     *client.Error  `json:"error"`
}

// answerOf decodes a `call --json` answer the script saved.
func answerOf(t *testing.T, text string) callAnswer {
	t.Helper()
	var a callAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("a call --json answer: %v\n%s", err, text)
	}
	return a
}

// toolbeltCall runs `open-conduit call operation` as a program holding
// socket and token would, and returns its exit status and output.
func toolbeltCall(t *testing.T, socket, token, operation string) (int, string) {
	t.Helper()
	cmd := exec.Command(bins.OpenConduit, "call", operation)
	cmd.Env = append(os.Environ(), protocol.EnvToolbelt+"="+socket, protocol.EnvToken+"="+token)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("open-conduit call %s: %v", operation, err)
	}
	return 0, string(out)
}

// waitScript writes a note, waits for the drill's go1, declares the
// builtin Wait and exits 0; woken, it writes the same note again (a retry
// under the same request ID) and prints done.
const waitScript = `if grep -q '"woke"' "$OPEN_CONDUIT_INPUTS"; then
  { cat "$OPEN_CONDUIT_INPUTS"; echo; } > "$D/inputs2"
  "$OPEN_CONDUIT" call notes.write --json --input '{"thread":"t1","text":"cooling"}' --request-id fixed-id > "$D/write2"
  echo done
  exit 0
fi
"$OPEN_CONDUIT" call notes.write --json --input '{"thread":"t1","text":"cooling"}' --request-id fixed-id > "$D/write1"
gofor go1
"$OPEN_CONDUIT" call wait --input '{"description":"cool down","timeout_seconds":%d}' > "$D/wait1"
echo first
`

// coolDown is the Wait's timeout, in seconds.
const coolDown = 2

// TestDrillSignedWebhookRunsAShellScriptThatWaitsAndCompletes: a signed
// delivery becomes Work the shell executor runs; the script writes a note,
// declares a Wait and exits; the Work waits, visibly, until the Wait's
// timeout wakes it; the second attempt, told why it woke, completes it.
// The note written twice under one request ID is there once.
func TestDrillSignedWebhookRunsAShellScriptThatWaitsAndCompletes(t *testing.T) {
	r := startRunRig(t, fmt.Sprintf(waitScript, coolDown))
	ctx := context.Background()
	// Negative control: a badly signed delivery is refused and makes no
	// Work.
	if got := postSigned(t, r.base, `{"issue":{"id":9,"title":"bad"}}`, "not-"+signedSecret, "bad1"); got != http.StatusUnauthorized {
		t.Fatalf("a badly signed delivery: status %d, want 401", got)
	}
	ev, work := r.deliver("d1", 1)

	first := r.waitRunning(work, 1)
	if first.Executor != shell.Name || first.Epoch != 1 {
		t.Fatalf("the first execution: %+v", first)
	}
	if a := answerOf(t, r.read("write1")); a.Replayed || a.Error != nil {
		t.Fatalf("the first notes.write: %+v", a)
	}
	r.touch("go1")

	// Waiting, with the Wait the script declared, in the listing and in
	// work show's view. The Work waits only the Wait's 2 s, less the time
	// its attempt takes to settle, so a drill on a machine too loaded to
	// look within them checks the Wait afterwards instead (below), saying
	// so.
	var d client.WorkDetail
	r.e.Eventually("the Work waiting", func() bool {
		d = r.detail(work)
		return d.Work.State == "waiting" || len(d.Executions) > 1 || d.Work.State == "completed"
	})
	var waitID string
	if d.Work.State == "waiting" && d.Wait != nil {
		w := *d.Wait
		waitID = w.ID
		if w.Description != "cool down" || w.Owner != "" || w.Execution != first.ID || w.State != "active" {
			t.Fatalf("the Wait: %+v", w)
		}
		if got := w.Due.Sub(w.Created); got < coolDown*time.Second-time.Second || got > coolDown*time.Second+time.Second {
			t.Fatalf("the Wait is due %s after it was declared, want about %d s", got, coolDown)
		}
		waits, err := r.e.C.Waits(ctx, client.WaitsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(waits.Waits) == 1 && waits.Waits[0].ID == w.ID && waits.Waits[0].Work == work {
			// work show says so too, unless the Wait's timeout woke the
			// Work meanwhile.
			out, err := exec.Command(bins.OpenConduit, "work", "show", work, "--state", r.e.State).CombinedOutput()
			if err != nil || (strings.Contains(string(out), "waiting") && !strings.Contains(string(out), "cool down")) {
				t.Fatalf("work show of the waiting Work: %v\n%s", err, out)
			}
		} else if len(waits.Waits) != 0 {
			t.Fatalf("the active Waits: %+v, want the Work's %s or, once woken, none", waits, w.ID)
		}
		if x := d.Executions[0]; x.State != "settled" || x.Outcome != protocol.OutcomeWaiting || x.Wait != w.ID {
			t.Fatalf("the first execution after it declared the Wait: %+v", x)
		}
	} else {
		t.Logf("the Work was woken before the drill looked (the machine is loaded); its Wait is checked from what woke the next attempt")
	}

	// The timer wakes it: the second attempt is told it woke by the
	// timeout, and completes the Work.
	d = r.waitState(work, "completed")
	if len(d.Executions) != 2 {
		t.Fatalf("the completed Work has %d executions, want 2: %+v", len(d.Executions), d.Executions)
	}
	x1, x2 := d.Executions[0], d.Executions[1]
	if x1.Outcome != protocol.OutcomeWaiting || x2.Outcome != protocol.OutcomeCompleted || x2.Attempt != 2 || x2.ExitCode == nil || *x2.ExitCode != 0 {
		t.Fatalf("the executions: %+v", d.Executions)
	}
	if d.Wait != nil {
		t.Fatalf("the completed Work still waits: %+v", d.Wait)
	}
	if waits, err := r.e.C.Waits(ctx, client.WaitsQuery{}); err != nil || len(waits.Waits) != 0 {
		t.Fatalf("active Waits after the Work completed: %+v %v", waits, err)
	}
	var in shell.Inputs
	if err := json.Unmarshal([]byte(r.read("inputs2")), &in); err != nil {
		t.Fatal(err)
	}
	if in.Attempt != 2 || in.Execution != x2.ID || in.Woke == nil || in.Woke.Reason != protocol.WakeTimeout ||
		in.Woke.Wait != x1.Wait || (waitID != "" && in.Woke.Wait != waitID) {
		t.Fatalf("the second attempt's inputs: %+v woke %+v, want attempt 2 woken by the timeout of %s", in, in.Woke, x1.Wait)
	}
	// The timer fired no sooner than the Wait's timeout after the first
	// attempt began (it declared the Wait after it started).
	if got := in.Woke.At.Sub(x1.Started); got < coolDown*time.Second {
		t.Fatalf("the Wait woke %s after the first attempt started, before its %d s timeout", got, coolDown)
	}
	if got := r.output(work, x2.ID, shell.StdoutArtifact); got != "done\n" {
		t.Fatalf("the second attempt's stdout: %q, want done", got)
	}
	if got := r.output(work, x1.ID, shell.StdoutArtifact); got != "first\n" {
		t.Fatalf("the first attempt's stdout: %q, want first", got)
	}

	// The note was written once; the second attempt's call under the same
	// request ID was answered the first one's result.
	a1, a2 := answerOf(t, r.read("write1")), answerOf(t, r.read("write2"))
	if !a2.Replayed || string(a2.Output) != string(a1.Output) || a2.RequestID != "fixed-id" {
		t.Fatalf("the woken attempt's notes.write under the same request ID: %+v, want the first's %s replayed", a2, a1.Output)
	}
	if got := r.thread("t1"); len(got) != 1 || got[0].Text != "cooling" {
		t.Fatalf("thread t1 holds %+v, want the one note", got)
	}
	if evs := eventsOf(t, r.e, "acme", ev.DeliveryID); len(evs) != 1 {
		t.Fatalf("the delivery's Event is there %d times", len(evs))
	}
	works, err := r.e.C.Works(ctx, client.WorkQuery{Scope: "acme"})
	if err != nil || len(works.Work) != 1 {
		t.Fatalf("acme's Work: %+v %v, want the one", works, err)
	}
	report(t, "webhook → shell script → Wait of %d s (%s) → woken by its timeout → completed in 2 attempts; one note", coolDown, x1.Wait)
}

// retryScript writes a note under request ID r-1, retries that call %[1]d
// times under the same ID, writes another under r-2, and reuses r-1 for
// another operation (refused: a request ID names one call).
const retryScript = `"$OPEN_CONDUIT" call notes.write --json --input '{"thread":"t2","text":"once"}' --request-id r-1 > "$D/first"
i=0
while [ $i -lt %[1]d ]; do
  i=$((i+1))
  "$OPEN_CONDUIT" call notes.write --json --input '{"thread":"t2","text":"once"}' --request-id r-1 > "$D/retry$i"
done
"$OPEN_CONDUIT" call notes.write --json --input '{"thread":"t2","text":"another"}' --request-id r-2 > "$D/other"
code=0
"$OPEN_CONDUIT" call notes.read --json --input '{"thread":"t2"}' --request-id r-1 > "$D/reused" 2>/dev/null || code=$?
echo $code > "$D/reused-code"
`

// TestDrillOperationRetriedWithOneRequestIDTakesEffectOnce: within one
// execution the script repeats notes.write under one request ID and calls
// it once under another: exactly two notes exist, every repeat is answered
// the first call's output marked replayed, and the request ID reused for
// another operation is refused.
func TestDrillOperationRetriedWithOneRequestIDTakesEffectOnce(t *testing.T) {
	retries := scale(2, 50)
	r := startRunRig(t, fmt.Sprintf(retryScript, retries))
	_, work := r.deliver("d1", 1)
	d := r.waitState(work, "completed")
	if len(d.Executions) != 1 || d.Executions[0].Outcome != protocol.OutcomeCompleted {
		t.Fatalf("the Work's executions: %+v, want one completed", d.Executions)
	}
	first := answerOf(t, r.read("first"))
	if first.Replayed || first.Error != nil || first.RequestID != "r-1" {
		t.Fatalf("the first call under r-1: %+v, want answered, not replayed", first)
	}
	for i := 1; i <= retries; i++ {
		a := answerOf(t, r.read(fmt.Sprintf("retry%d", i)))
		if !a.Replayed || string(a.Output) != string(first.Output) {
			t.Fatalf("retry %d under r-1: %+v, want the first call's output %s replayed", i, a, first.Output)
		}
	}
	other := answerOf(t, r.read("other"))
	if other.Replayed || other.Error != nil || string(other.Output) == string(first.Output) {
		t.Fatalf("the call under r-2: %+v, want a new note's answer", other)
	}
	if code := strings.TrimSpace(r.read("reused-code")); code != "1" {
		t.Fatalf("r-1 reused for notes.read exited %s, want 1 (refused)", code)
	}
	if a := answerOf(t, r.read("reused")); a.Error == nil || a.Error.Code != protocol.CodeConflict {
		t.Fatalf("r-1 reused for notes.read: %+v, want conflict", a)
	}
	got := r.thread("t2")
	if len(got) != 2 || got[0].Text != "once" || got[1].Text != "another" {
		t.Fatalf("thread t2 holds %+v, want the two notes", got)
	}
	report(t, "notes.write called %d times under one request ID and once under another: %d notes", retries+1, len(got))
}

// tokenScript saves the toolbelt's socket and its execution's token where
// the drill reads them, and runs until the drill creates go.
const tokenScript = `echo "$OPEN_CONDUIT_TOOLBELT" > "$D/socket"
echo "$OPEN_CONDUIT_TOKEN" > "$D/token"
gofor go
echo bye
`

// TestDrillStaleExecutionTokenIsRefused: the token a script was given
// works while its execution runs and is refused (exit 3, unauthorized)
// once the execution settled; a made-up token is refused throughout.
func TestDrillStaleExecutionTokenIsRefused(t *testing.T) {
	r := startRunRig(t, tokenScript)
	_, work := r.deliver("d1", 1)
	r.waitRunning(work, 1)
	socket, token := strings.TrimSpace(r.read("socket")), strings.TrimSpace(r.read("token"))
	if socket == "" || token == "" {
		t.Fatalf("the script was given socket %q and a token of %d bytes", socket, len(token))
	}
	madeUp := "oct_" + strings.Repeat("x", max(len(token)-4, 8))

	// Negative control: while the execution runs its token works.
	code, out := toolbeltCall(t, socket, token, "read_context")
	if code != 0 || !strings.Contains(out, work) {
		t.Fatalf("read_context with the running execution's token: exit %d\n%s", code, out)
	}
	check := func(when, what, tok string) {
		t.Helper()
		code, out := toolbeltCall(t, socket, tok, "read_context")
		if code != 3 || !strings.Contains(out, protocol.CodeUnauthorized) || strings.Contains(out, work) {
			t.Fatalf("%s, read_context with %s: exit %d, want 3 unauthorized\n%s", when, what, code, out)
		}
		if strings.Contains(out, token) {
			t.Fatalf("the refusal prints the token\n%s", out)
		}
	}
	check("while it runs", "a made-up token", madeUp)

	r.touch("go")
	d := r.waitState(work, "completed")
	if len(d.Executions) != 1 || d.Executions[0].State != "settled" {
		t.Fatalf("the executions: %+v", d.Executions)
	}
	check("after the execution settled", "its token", token)
	check("after the execution settled", "a made-up token", madeUp)
	report(t, "a settled execution's token and a made-up one refused with exit 3; the running one's answered")
}

// holdScript finishes at once for a delivery titled quick; otherwise it
// records its pid, runs until the drill creates go, then calls the
// toolbelt with the token it was started with (which must still work
// after a recovery), writes its output and exits 0.
const holdScript = `if grep -q '"quick' "$OPEN_CONDUIT_INPUTS"; then
  echo quick
  exit 0
fi
echo $$ > "$D/pid"
echo started
gofor go
"$OPEN_CONDUIT" call read_context > /dev/null
echo finished
`

// startTicks is a process's start time (clock ticks after boot), which
// with its pid names one process; ok is false when none runs.
func startTicks(pid int) (uint64, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	return ticks, err == nil
}

// heldScript is a running holdScript: its pid and start time.
type heldScript struct {
	pid   int
	ticks uint64
}

// held waits for the running holdScript's pid.
func (r *runRig) held() heldScript {
	r.t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(r.read("pid")))
	if err != nil {
		r.t.Fatal(err)
	}
	ticks, ok := startTicks(pid)
	if !ok {
		r.t.Fatalf("the script's process %d is not running", pid)
	}
	return heldScript{pid: pid, ticks: ticks}
}

// same reports whether the script's very process still runs.
func (h heldScript) same() bool {
	ticks, ok := startTicks(h.pid)
	return ok && ticks == h.ticks
}

// waitRecovered waits until the Work's one execution runs again under
// lease epoch epoch, and checks the script's process is the one that ran
// before.
func (r *runRig) waitRecovered(work string, epoch uint64, h heldScript) client.Execution {
	r.t.Helper()
	var x client.Execution
	r.e.Eventually(fmt.Sprintf("work %s's execution recovered under lease epoch %d", work, epoch), func() bool {
		d := r.detail(work)
		if len(d.Executions) != 1 {
			r.t.Fatalf("an execution was started again rather than recovered: %+v", d.Executions)
		}
		x = d.Executions[0]
		return x.Epoch >= epoch
	})
	if x.Epoch != epoch || x.State != "running" {
		r.t.Fatalf("the recovered execution: %+v, want running under lease epoch %d\n%s", x, epoch, r.e.Log)
	}
	if !h.same() {
		r.t.Fatalf("the script's process %d is gone after the recovery: it was killed or started again\n%s", h.pid, r.e.Log)
	}
	return x
}

// finish lets the held script end and checks the Work completes with its
// one execution, recovered under epoch, whose stdout holds everything the
// script wrote before and after the crash.
func (r *runRig) finish(work string, epoch uint64, h heldScript) {
	r.t.Helper()
	r.touch("go")
	d := r.waitState(work, "completed")
	if len(d.Executions) != 1 {
		r.t.Fatalf("the completed Work has %d executions, want the one recovered: %+v", len(d.Executions), d.Executions)
	}
	x := d.Executions[0]
	if x.Epoch != epoch || x.Outcome != protocol.OutcomeCompleted || x.ExitCode == nil || *x.ExitCode != 0 {
		r.t.Fatalf("the execution: %+v, want completed with exit 0 under lease epoch %d", x, epoch)
	}
	if got := r.output(work, x.ID, shell.StdoutArtifact); got != "started\nfinished\n" {
		r.t.Fatalf("the recovered execution's stdout: %q, want what the script wrote before and after the crash", got)
	}
	r.e.Eventually("the script's process ended", func() bool { return !h.same() })
	// The next held script writes its own pid and waits for its own go.
	for _, name := range []string{"go", "pid"} {
		if err := os.Remove(filepath.Join(r.dir, name)); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestDrillShellPackageKilledMidExecutionIsReadopted kills the shell
// package -9 while its script runs: the package restarts, adopts the
// execution under the next lease epoch, and the script (the same process)
// runs on and completes the Work; no attempt is started again.
func TestDrillShellPackageKilledMidExecutionIsReadopted(t *testing.T) {
	iterations := scale(1, 5)
	r := startRunRig(t, holdScript)
	for i := range iterations {
		_, work := r.deliver(fmt.Sprintf("d%d", i), i)
		r.waitRunning(work, 1)
		h := r.held()
		before := r.e.Extension(shell.Name)
		if before.State != "running" || before.PID <= 0 {
			t.Fatalf("the shell package: %+v", before)
		}
		if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r.e.Eventually("the shell package restarted", func() bool {
			x := r.e.Extension(shell.Name)
			return x.Restarts > before.Restarts && x.State == "running" && x.PID != before.PID
		})
		r.waitRecovered(work, 2, h)
		r.finish(work, 2, h)
	}
	report(t, "shell package killed -9 mid-execution %d times: each script re-adopted under lease epoch 2 and completed, none started again", iterations)
}

// TestDrillDaemonKilled9MidExecutionResumes kills serve -9 while a script
// runs: after the restart the Events and the execution that completed
// before the kill are there, the script (the same process) is re-adopted
// under the next lease epoch and completes its Work.
func TestDrillDaemonKilled9MidExecutionResumes(t *testing.T) {
	iterations := scale(1, 10)
	r := startRunRig(t, holdScript)
	type done struct {
		work, execution, event string
	}
	var before []done
	for i := range iterations {
		// A Work that completes before the kill.
		ev, quick := r.deliverTitled(fmt.Sprintf("q%d", i), 1000+i, fmt.Sprintf("quick %d", i))
		d := r.waitState(quick, "completed")
		before = append(before, done{work: quick, execution: d.Executions[0].ID, event: ev.ID})

		_, work := r.deliver(fmt.Sprintf("d%d", i), i)
		r.waitRunning(work, 1)
		h := r.held()
		r.e.Kill()
		if !h.same() {
			t.Fatalf("iteration %d: the script died with the daemon", i)
		}
		r.launch()
		r.waitRecovered(work, 2, h)
		for _, b := range before {
			d := r.detail(b.work)
			if d.Work.State != "completed" || len(d.Executions) != 1 || d.Executions[0].ID != b.execution || d.Executions[0].Outcome != protocol.OutcomeCompleted {
				t.Fatalf("iteration %d: Work %s completed before a kill is now %+v", i, b.work, d)
			}
			if _, err := r.e.C.EventRoute(context.Background(), b.event, 0); err != nil {
				t.Fatalf("iteration %d: Event %s accepted before a kill: %v", i, b.event, err)
			}
		}
		r.finish(work, 2, h)
	}
	report(t, "serve killed -9 mid-execution %d times: each script re-adopted under lease epoch 2 and completed; %d completed Work before the kills intact", iterations, len(before))
}

// bigOutputScript prints 120,000 numbered lines (about 3.3 MiB) and exits.
const bigOutputScript = `i=0
while [ $i -lt 120000 ]; do echo "line $i of the transcript"; i=$((i+1)); done
`

// TestDrillLargeOutputArrivesWholeThroughTheArtifactWindow: a script's
// output of several chunks goes from the shell package's files into the
// daemon's artifact store with a chunk in flight while the next is sent
// (the daemon announces a window of two), and is read back byte for byte.
func TestDrillLargeOutputArrivesWholeThroughTheArtifactWindow(t *testing.T) {
	r := startRunRig(t, bigOutputScript)
	_, work := r.deliver("d1", 1)
	d := r.waitState(work, "completed")
	var want strings.Builder
	for i := range 120000 {
		fmt.Fprintf(&want, "line %d of the transcript\n", i)
	}
	got := r.output(work, d.Executions[0].ID, "stdout")
	if got != want.String() {
		t.Fatalf("stdout came back as %d bytes, want the %d the script printed", len(got), want.Len())
	}
	report(t, "%d bytes of stdout, at least %d chunks, read back whole", len(got), (len(got)+protocol.MaxChunkBytes-1)/protocol.MaxChunkBytes)
}
