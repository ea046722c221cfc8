package cli

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// standIn is a toolbelt as docs/protocol.md describes it, serving on a
// Unix socket for `call` to reach: it answers token "good" only, echoes
// notes.add's input, replays a request ID it has answered, refuses
// notes.fail, and drops the first connection of each flaky.op request
// without an answer.
type standIn struct {
	socket string

	mu       sync.Mutex
	requests []seen
	answered map[string]jsontext.Value
	dropped  map[string]bool
}

type seen struct {
	auth string
	req  client.ToolbeltRequest
}

func newStandIn(t *testing.T) *standIn {
	t.Helper()
	dir, err := os.MkdirTemp("", "call")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &standIn{socket: filepath.Join(dir, "toolbelt.sock"), answered: map[string]jsontext.Value{}, dropped: map[string]bool{}}
	ln, err := net.Listen("unix", s.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	var req client.ToolbeltRequest
	if err := json.UnmarshalRead(r.Body, &req); err != nil {
		answerWith(w, http.StatusBadRequest, client.ToolbeltAnswer{Error: &client.Error{Code: "invalid", Message: err.Error()}})
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, seen{auth: r.Header.Get("Authorization"), req: req})
	drop := req.Operation == "flaky.op" && !s.dropped[req.RequestID]
	s.dropped[req.RequestID] = true
	prior, replay := s.answered[req.RequestID]
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != client.ToolbeltCallPath:
		answerWith(w, http.StatusNotFound, client.ToolbeltAnswer{Error: &client.Error{Code: "not_found", Message: "no such path"}})
	case r.Header.Get("Authorization") != "Bearer good":
		answerWith(w, http.StatusUnauthorized, client.ToolbeltAnswer{Error: &client.Error{Code: "unauthorized", Message: "the token is not a running execution's"}})
	case drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	case req.Operation == "notes.fail":
		answerWith(w, http.StatusBadRequest, client.ToolbeltAnswer{Error: &client.Error{Code: "invalid", Message: "notes wants a text"}})
	case replay:
		answerWith(w, http.StatusOK, client.ToolbeltAnswer{Output: prior, Replayed: true})
	default:
		s.mu.Lock()
		s.answered[req.RequestID] = req.Input
		s.mu.Unlock()
		answerWith(w, http.StatusOK, client.ToolbeltAnswer{Output: req.Input})
	}
}

func answerWith(w http.ResponseWriter, status int, ans client.ToolbeltAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.MarshalWrite(w, ans)
}

func (s *standIn) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.requests...)
}

// callProcess runs this test binary as 'open-conduit call args…' with env as
// its whole environment and stdin as its input.
func callProcess(t *testing.T, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"call"}, args...)...)
	cmd.Env = append(env, "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestCallPrintsTheOutputAndExitsByOutcome(t *testing.T) {
	s := newStandIn(t)
	env := []string{protocol.EnvToolbelt + "=" + s.socket, protocol.EnvToken + "=good"}
	file := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(file, []byte(`{"text":"from a file"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		env      []string
		stdin    string
		args     []string
		code     int
		stdout   string // exact, when set
		stderr   string // contained, when set
		sent     bool   // a request reached the toolbelt
		sentBody string // the input it carried, when set
	}{
		{name: "literal input", env: env, args: []string{"notes.add", "--input", `{"text":"hi"}`},
			code: 0, stdout: `{"text":"hi"}` + "\n", sent: true, sentBody: `{"text":"hi"}`},
		{name: "input from a file", env: env, args: []string{"notes.add", "--input", "@" + file},
			code: 0, stdout: `{"text":"from a file"}` + "\n", sent: true},
		{name: "input from stdin", env: env, stdin: `{"text":"piped"}`, args: []string{"notes.add", "--input", "-"},
			code: 0, stdout: `{"text":"piped"}` + "\n", sent: true},
		{name: "no input is an empty object", env: env, args: []string{"read_context"},
			code: 0, stdout: "{}\n", sent: true, sentBody: `{}`},
		{name: "input not JSON", env: env, args: []string{"notes.add", "--input", `{"text":`},
			code: 2, stderr: "--input must be a JSON object"},
		{name: "input not an object", env: env, args: []string{"notes.add", "--input", `[1]`},
			code: 2, stderr: "--input must be a JSON object"},
		{name: "input file missing", env: env, args: []string{"notes.add", "--input", "@" + file + ".gone"},
			code: 2, stderr: "reading the input file"},
		{name: "bad request ID", env: env, args: []string{"notes.add", "--request-id", "a b"},
			code: 2, stderr: "--request-id"},
		{name: "no toolbelt variable", env: []string{protocol.EnvToken + "=good"}, args: []string{"notes.add"},
			code: 2, stderr: "$" + protocol.EnvToolbelt + " is not set"},
		{name: "no token variable", env: []string{protocol.EnvToolbelt + "=" + s.socket}, args: []string{"notes.add"},
			code: 2, stderr: "$" + protocol.EnvToken + " is not"},
		{name: "token refused", env: []string{protocol.EnvToolbelt + "=" + s.socket, protocol.EnvToken + "=stale"}, args: []string{"notes.add"},
			code: exitUnauthorized, stderr: "unauthorized: the token is not a running execution's", sent: true},
		{name: "operation fails", env: env, args: []string{"notes.fail"},
			code: 1, stderr: "invalid: notes wants a text", sent: true},
		{name: "no operation", env: env, args: nil, code: 2, stderr: "needs at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.seen())
			code, stdout, stderr := callProcess(t, tc.env, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if tc.stdout != "" && stdout != tc.stdout {
				t.Errorf("stdout %q, want %q", stdout, tc.stdout)
			}
			if tc.code != 0 && stdout != "" {
				t.Errorf("a failed call printed %q on stdout", stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
			got := s.seen()
			if sent := len(got) > before; sent != tc.sent {
				t.Fatalf("request sent = %v, want %v", sent, tc.sent)
			}
			if !tc.sent {
				return
			}
			last := got[len(got)-1]
			if !strings.HasPrefix(last.req.RequestID, "rq_") || last.req.Operation != tc.args[0] {
				t.Errorf("request %+v: want operation %s with a fresh request ID", last.req, tc.args[0])
			}
			if tc.sentBody != "" && string(last.req.Input) != tc.sentBody {
				t.Errorf("input sent %s, want %s", last.req.Input, tc.sentBody)
			}
		})
	}
}

func TestCallJSONCarriesReplayedAndTheRequestID(t *testing.T) {
	s := newStandIn(t)
	env := []string{protocol.EnvToolbelt + "=" + s.socket, protocol.EnvToken + "=good"}
	var answers []callAnswer
	for range 2 {
		code, stdout, stderr := callProcess(t, env, "", "notes.add", "--input", `{"n":1}`, "--request-id", "script-1", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var a callAnswer
		if err := json.Unmarshal([]byte(stdout), &a); err != nil {
			t.Fatalf("--json printed %q: %v", stdout, err)
		}
		if err := a.Output.Compact(); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	if answers[0].Replayed || !answers[1].Replayed || answers[1].RequestID != "script-1" || string(answers[1].Output) != `{"n":1}` {
		t.Fatalf("answers %+v; want the second replayed under script-1", answers)
	}
	// A refusal with --json is the answer's error, with the request ID.
	code, stdout, _ := callProcess(t, env, "", "notes.fail", "--json")
	var a callAnswer
	if err := json.Unmarshal([]byte(stdout), &a); code != 1 || err != nil || a.Error == nil || a.Error.Code != "invalid" || a.RequestID == "" {
		t.Fatalf("exit %d, --json printed %q (%v)", code, stdout, err)
	}
}

func TestCallRetriesATransportFailureWithTheSameRequestID(t *testing.T) {
	s := newStandIn(t)
	env := []string{protocol.EnvToolbelt + "=" + s.socket, protocol.EnvToken + "=good"}
	code, stdout, stderr := callProcess(t, env, "", "flaky.op", "--input", `{"k":"v"}`)
	if code != 0 || stdout != `{"k":"v"}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	got := s.seen()
	if len(got) != 2 || got[0].req.RequestID == "" || got[0].req.RequestID != got[1].req.RequestID {
		t.Fatalf("requests %+v; want the dropped one retried with its request ID", got)
	}
}

func TestCallHelpSaysTheExitStatuses(t *testing.T) {
	code, stdout, _ := run("call", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"--input", "--request-id", "--json", protocol.EnvToolbelt, protocol.EnvToken, "3 unauthorized"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("help lacks %q:\n%s", w, stdout)
		}
	}
}
