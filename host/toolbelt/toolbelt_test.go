package toolbelt

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// post sends body to the toolbelt with the authorization header auth ("" for
// none) and returns the HTTP status and the decoded answer.
func (r *rig) post(auth string, body []byte) (int, client.ToolbeltAnswer) {
	r.t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", r.socket)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, "http://toolbelt"+client.ToolbeltCallPath, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans client.ToolbeltAnswer
	if err := json.UnmarshalRead(resp.Body, &ans); err != nil {
		r.t.Fatalf("answer of status %s: %v", resp.Status, err)
	}
	return resp.StatusCode, ans
}

func TestCallWithDeadOrMissingTokenIsUnauthorized401(t *testing.T) {
	r := newRig(t)
	body := []byte(`{"operation":"notes.add","input":{"text":"hi"},"request_id":"r1"}`)
	for _, tc := range []struct {
		name, auth string
	}{
		{"no header", ""},
		{"not bearer", "Basic " + tokenA},
		{"empty bearer", "Bearer "},
		{"unknown token", "Bearer tok-unknown"},
		{"settled execution's token", "Bearer tok-settled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ans := r.post(tc.auth, body)
			if status != http.StatusUnauthorized || ans.Error == nil || ans.Error.Code != protocol.CodeUnauthorized {
				t.Fatalf("status %d, answer %+v; want 401 unauthorized", status, ans)
			}
			if strings.Contains(ans.Error.Message, "tok-") {
				t.Errorf("the refusal repeats the token: %q", ans.Error.Message)
			}
		})
	}
	if calls := r.pkgs.callsOf(protocol.MethodOperationCall); len(calls) != 0 {
		t.Fatalf("a refused token called the handler %d times", len(calls))
	}
	// Control: the same body with a live token is answered.
	if status, ans := r.post("Bearer "+tokenA, body); status != http.StatusOK || ans.Error != nil {
		t.Fatalf("live token: status %d, answer %+v", status, ans)
	}
}

func TestCallOnlyGrantedOperations(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, token, operation string
		code                   string
		called                 bool
	}{
		{"granted handler", tokenA, "notes.add", "", true},
		{"declared but not granted", tokenA, "notes.delete", protocol.CodeUnauthorized, false},
		{"toolbelt none grants nothing", tokenN, "notes.add", protocol.CodeUnauthorized, false},
		{"granted but no package declares it", tokenA, "gone.op", protocol.CodeUndeclared, false},
		{"emit operation its package does not serve", tokenA, "gh.emit", protocol.CodeUnsupported, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.pkgs.callsOf(protocol.MethodOperationCall))
			ans, err := r.call(tc.token, tc.operation, `{"text":"hi"}`, "")
			if codeOf(err) != tc.code {
				t.Fatalf("error %v (code %q), want code %q", err, codeOf(err), tc.code)
			}
			if tc.code == "" && string(ans.Output) != `{"text":"hi"}` {
				t.Errorf("output %s, want the handler's echo", ans.Output)
			}
			if called := len(r.pkgs.callsOf(protocol.MethodOperationCall)) > before; called != tc.called {
				t.Errorf("handler called = %v, want %v", called, tc.called)
			}
		})
	}
	// A binding taken out of the configuration grants nothing any more.
	r.setGrant("agent", Grant{}, false)
	if _, err := r.call(tokenA, "notes.add", `{}`, ""); codeOf(err) != protocol.CodeUnauthorized {
		t.Fatalf("binding gone: %v, want unauthorized", err)
	}
}

func TestCallAuthorityIsTheHostsNotTheCallers(t *testing.T) {
	r := newRig(t)
	// The body may not carry an authority: it is refused, not ignored.
	status, ans := r.post("Bearer "+tokenA, []byte(`{"operation":"notes.add","input":{},"authority":{"scope_id":"other"}}`))
	if status != http.StatusBadRequest || ans.Error == nil || ans.Error.Code != protocol.CodeInvalid {
		t.Fatalf("authority in the body: status %d, answer %+v; want 400 invalid", status, ans)
	}
	if _, err := r.call(tokenA, "notes.add", `{"scope_id":"other"}`, "rq-auth"); err != nil {
		t.Fatal(err)
	}
	calls := r.pkgs.callsOf(protocol.MethodOperationCall)
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	want := protocol.Authority{Scope: "s", Work: execA.Work, Execution: execA.ID, Connection: "bot", Caller: "execution:" + execA.ID}
	if c.pkg != "notes" || c.params.Authority != want || c.params.RequestID != "rq-auth" || c.params.Operation != "notes.add" {
		t.Fatalf("call %+v, want package notes with authority %+v and request rq-auth", c, want)
	}
}

func TestCallWithOneRequestIDRunsTheHandlerOnce(t *testing.T) {
	r := newRig(t)
	r.pkgs.setHandler(func(_ context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
		n := len(r.pkgs.callsOf(protocol.MethodOperationCall))
		return protocol.OperationCallResult{Output: protocol.Payload{Data: []byte(fmt.Sprintf(`{"n":%d}`, n))}}, nil
	})
	first, err := r.call(tokenA, "notes.add", `{}`, "rq-1")
	if err != nil || first.Replayed {
		t.Fatalf("first call: %+v, %v", first, err)
	}
	// The retry may come from the Work's next execution: same Work, same
	// result.
	for _, token := range []string{tokenA, tokenA2} {
		again, err := r.call(token, "notes.add", `{}`, "rq-1")
		if err != nil || !again.Replayed || string(again.Output) != string(first.Output) {
			t.Fatalf("retry as %s: %+v, %v; want the replayed %s", token, again, err, first.Output)
		}
	}
	if n := len(r.pkgs.callsOf(protocol.MethodOperationCall)); n != 1 {
		t.Fatalf("handler called %d times for one request ID, want 1", n)
	}

	// Negative controls: a new request ID, another Work's same request ID,
	// and no request ID at all each run the handler.
	for _, tc := range []struct{ name, token, id string }{
		{"new request ID", tokenA, "rq-2"},
		{"another Work's same request ID", tokenB, "rq-1"},
	} {
		before := len(r.pkgs.callsOf(protocol.MethodOperationCall))
		ans, err := r.call(tc.token, "notes.add", `{}`, tc.id)
		if err != nil || ans.Replayed || len(r.pkgs.callsOf(protocol.MethodOperationCall)) != before+1 {
			t.Fatalf("%s: %+v, %v; want a fresh handler call", tc.name, ans, err)
		}
	}
	status, ans := r.post("Bearer "+tokenA, []byte(`{"operation":"notes.add","input":{}}`))
	status2, ans2 := r.post("Bearer "+tokenA, []byte(`{"operation":"notes.add","input":{}}`))
	if status != 200 || status2 != 200 || ans.Replayed || ans2.Replayed || string(ans.Output) == string(ans2.Output) {
		t.Fatalf("calls without a request ID: %+v, %+v; want two fresh calls", ans, ans2)
	}

	// The same request ID for another operation is a conflict, not a
	// replay of the wrong output.
	if _, err := r.call(tokenA, "wait", `{}`, "rq-1"); codeOf(err) != "" {
		t.Fatalf("builtin wait with a handler's request ID: %v (builtins keep their own records)", err)
	}
	r.setGrant("agent", Grant{Operations: []string{"notes.add", "gh.wait", "wait"}, Toolbelt: "cli"}, true)
	if _, err := r.call(tokenA, "gh.wait", `{}`, "rq-1"); codeOf(err) != "" {
		t.Fatalf("wait operation of another package with the request ID: %v", err)
	}
	r.pkgs.declare("notes", protocol.Operation{Name: "notes.other", Kind: protocol.OperationHandler})
	r.setGrant("agent", Grant{Operations: []string{"notes.add", "notes.other"}, Toolbelt: "cli"}, true)
	before := len(r.pkgs.callsOf(protocol.MethodOperationCall))
	if _, err := r.call(tokenA, "notes.other", `{}`, "rq-1"); codeOf(err) != protocol.CodeConflict {
		t.Fatalf("another operation of the package with a used request ID: %v, want conflict", err)
	}
	if len(r.pkgs.callsOf(protocol.MethodOperationCall)) != before {
		t.Fatal("a conflicting request ID called the handler")
	}
}

func TestConcurrentCallsWithOneRequestIDCallTheHandlerOnce(t *testing.T) {
	r := newRig(t)
	release := make(chan struct{})
	r.pkgs.entered = make(chan struct{}, 16)
	r.pkgs.setHandler(func(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return protocol.OperationCallResult{}, ctx.Err()
		}
		return protocol.OperationCallResult{Output: protocol.Payload{Data: []byte(`{"id":"note-1"}`)}}, nil
	})
	const n = 5
	var wg sync.WaitGroup
	answers := make([]client.ToolbeltAnswer, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = r.call(tokenA, "notes.add", `{}`, "rq-same")
		}()
	}
	select {
	case <-r.pkgs.entered:
	case <-time.After(deadline):
		t.Fatal("the handler was never called")
	}
	// Every call is in the server, holding or awaiting the request ID's
	// turn, before the first one's handler answers.
	key := "notes\x00" + replayKey(execA.Work, "rq-same")
	// (A second handler call ends the wait too: that is the failure.)
	for end := time.Now().Add(deadline); r.srv.keys.holders(key) < n && len(r.pkgs.callsOf(protocol.MethodOperationCall)) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("only %d of %d calls reached the toolbelt", r.srv.keys.holders(key), n)
		}
	}
	close(release)
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil || string(answers[i].Output) != `{"id":"note-1"}` {
			t.Fatalf("call %d: %+v, %v", i, answers[i], errs[i])
		}
		if !answers[i].Replayed {
			fresh++
		}
	}
	if calls := len(r.pkgs.callsOf(protocol.MethodOperationCall)); calls != 1 || fresh != 1 {
		t.Fatalf("handler called %d times, %d answers not replayed; want 1 and 1", calls, fresh)
	}
}

func TestFailedHandlerCommitsNothingSoARetryCallsAgain(t *testing.T) {
	r := newRig(t)
	var fail atomic.Bool
	fail.Store(true)
	r.pkgs.setHandler(func(_ context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
		if fail.Load() {
			return protocol.OperationCallResult{}, protocol.Errorf(protocol.ErrInvalid, "notes refuses this input")
		}
		return protocol.OperationCallResult{Output: protocol.Payload{Data: []byte(`{"ok":true}`)}}, nil
	})
	body := []byte(`{"operation":"notes.add","input":{},"request_id":"rq-f"}`)
	status, ans := r.post("Bearer "+tokenA, body)
	if status != http.StatusBadRequest || ans.Error == nil || ans.Error.Code != protocol.CodeInvalid {
		t.Fatalf("failing handler: status %d, %+v; want its invalid", status, ans)
	}
	fail.Store(false)
	status, ans = r.post("Bearer "+tokenA, body)
	if status != http.StatusOK || ans.Replayed || string(ans.Output) != `{"ok":true}` {
		t.Fatalf("retry after the failure: status %d, %+v; want a fresh call", status, ans)
	}
	if n := len(r.pkgs.callsOf(protocol.MethodOperationCall)); n != 2 {
		t.Fatalf("handler called %d times, want 2", n)
	}
}

func TestBuiltinWaitDeclaresAnUnownedWaitOnce(t *testing.T) {
	r := newRig(t)
	ans, err := r.call(tokenA, "wait", `{"description":"build","timeout_seconds":2}`, "rq-w")
	if err != nil {
		t.Fatal(err)
	}
	var w WaitAnswer
	decode(t, ans.Output, &w)
	if w.ID != "wt_x_a" || w.Work != "w_1" || w.Owner != "" || w.Description != "build" {
		t.Fatalf("answer %+v", w)
	}
	again, err := r.call(tokenA, "wait", `{"description":"build","timeout_seconds":2}`, "rq-w")
	if err != nil || !again.Replayed {
		t.Fatalf("retry: %+v, %v; want replayed", again, err)
	}
	got := r.eng.declaredWaits()
	want := declaredWait{exec: "x_a", owner: "", plan: protocol.WaitPlan{Description: "build", TimeoutSeconds: 2}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("declared %+v, want once %+v", got, want)
	}
	for _, tc := range []struct{ name, input string }{
		{"negative timeout", `{"timeout_seconds":-1}`},
		{"timeout over 30 days", fmt.Sprintf(`{"timeout_seconds":%d}`, protocol.MaxWaitTimeoutSeconds+1)},
		{"unknown field", `{"seconds":2}`},
	} {
		if _, err := r.call(tokenA, "wait", tc.input, ""); codeOf(err) != protocol.CodeInvalid {
			t.Errorf("%s: %v, want invalid", tc.name, err)
		}
	}
	if n := len(r.eng.declaredWaits()); n != 1 {
		t.Fatalf("refused waits declared: %d Waits", n)
	}
}

func TestWaitOperationDeclaresAWaitOwnedByItsPackage(t *testing.T) {
	r := newRig(t)
	plan := protocol.WaitPlan{Description: "checks on PR #1", TimeoutSeconds: 60}
	r.pkgs.setPlan(plan)
	ans, err := r.call(tokenA, "gh.wait", `{"pr":1}`, "rq-gh")
	if err != nil {
		t.Fatal(err)
	}
	var w WaitAnswer
	decode(t, ans.Output, &w)
	got := r.eng.declaredWaits()
	if len(got) != 1 || got[0].owner != "gh" || got[0].plan != plan || w.Owner != "gh" {
		t.Fatalf("declared %+v (answer %+v), want one Wait owned by gh with the package's plan", got, w)
	}
	if calls := r.pkgs.callsOf(protocol.MethodOperationWait); len(calls) != 1 || string(calls[0].params.Input.Data) != `{"pr":1}` {
		t.Fatalf("operation.wait calls %+v", calls)
	}
	// A second Wait the engine refuses is answered with its code, and
	// nothing is committed: a retry asks again.
	r.eng.setWaitErr(protocol.Errorf(protocol.ErrConflict, "the Work already has an active Wait"))
	if _, err := r.call(tokenA, "gh.wait", `{"pr":2}`, "rq-gh2"); codeOf(err) != protocol.CodeConflict {
		t.Fatalf("second Wait: %v, want conflict", err)
	}
	r.eng.setWaitErr(nil)
	if ans, err := r.call(tokenA, "gh.wait", `{"pr":2}`, "rq-gh2"); err != nil || ans.Replayed {
		t.Fatalf("retry after the refusal: %+v, %v; want a fresh call", ans, err)
	}
	// A plan the host cannot keep is refused.
	r.pkgs.setPlan(protocol.WaitPlan{TimeoutSeconds: -5})
	if _, err := r.call(tokenB, "gh.wait", `{}`, ""); codeOf(err) != protocol.CodeInternal {
		t.Fatalf("bad plan: %v, want internal", err)
	}
}

func TestDeclareOutcome(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, input, code string
	}{
		{"completed", `{"state":"completed","reason":"done"}`, ""},
		{"handoff", `{"state":"handoff"}`, ""},
		{"waiting is declared with wait", `{"state":"waiting"}`, protocol.CodeInvalid},
		{"unknown state", `{"state":"finished"}`, protocol.CodeInvalid},
		{"no state", `{}`, protocol.CodeInvalid},
		{"unknown field", `{"state":"failed","why":"x"}`, protocol.CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.eng.declaredOutcomes())
			_, err := r.call(tokenA, "declare_outcome", tc.input, "")
			if codeOf(err) != tc.code {
				t.Fatalf("%v, want code %q", err, tc.code)
			}
			if declared := len(r.eng.declaredOutcomes()) > before; declared != (tc.code == "") {
				t.Fatalf("engine told = %v", declared)
			}
		})
	}
	if got := r.eng.declaredOutcomes()[0]; got != (declaredOutcome{exec: "x_a", state: "completed", reason: "done"}) {
		t.Fatalf("declared %+v", got)
	}
}

func TestReadContextAnswersTheEnginesContext(t *testing.T) {
	r := newRig(t)
	ans, err := r.call(tokenB, "read_context", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		Work    protocol.WorkView `json:"work"`
		Context map[string]string `json:"context"`
	}
	decode(t, ans.Output, &tc)
	if tc.Work.ID != "w_2" || tc.Context["model"] != "m1" {
		t.Fatalf("context %s", ans.Output)
	}
}

func TestRequestBounds(t *testing.T) {
	r := newRig(t)
	big := fmt.Appendf(nil, `{"operation":"notes.add","input":{"text":%q}}`, strings.Repeat("x", client.MaxToolbeltRequest))
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"over 1 MiB", big, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge},
		{"not JSON", []byte(`{"operation":`), http.StatusBadRequest, protocol.CodeInvalid},
		{"no operation", []byte(`{"input":{}}`), http.StatusBadRequest, protocol.CodeInvalid},
		{"input not an object", []byte(`{"operation":"notes.add","input":[1]}`), http.StatusBadRequest, protocol.CodeInvalid},
		{"unknown member", []byte(`{"operation":"notes.add","inputs":{}}`), http.StatusBadRequest, protocol.CodeInvalid},
		{"request ID with a space", []byte(`{"operation":"notes.add","request_id":"a b"}`), http.StatusBadRequest, protocol.CodeInvalid},
		{"request ID too long", fmt.Appendf(nil, `{"operation":"notes.add","request_id":%q}`, strings.Repeat("r", client.MaxToolbeltRequestID+1)), http.StatusBadRequest, protocol.CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ans := r.post("Bearer "+tokenA, tc.body)
			if status != tc.status || ans.Error == nil || ans.Error.Code != tc.code {
				t.Fatalf("status %d, answer %+v; want %d %s", status, ans, tc.status, tc.code)
			}
		})
	}
	if n := len(r.pkgs.callsOf(protocol.MethodOperationCall)); n != 0 {
		t.Fatalf("refused requests called the handler %d times", n)
	}
	// Control: just under the bound is served.
	ok := fmt.Appendf(nil, `{"operation":"notes.add","input":{"text":%q}}`, strings.Repeat("x", client.MaxToolbeltRequest-100))
	if status, ans := r.post("Bearer "+tokenA, ok); status != http.StatusOK || ans.Error != nil {
		t.Fatalf("a request within the bound: status %d, %+v", status, ans.Error)
	}
}

func TestAnswerOverTheBoundIsTooLarge(t *testing.T) {
	r := newRig(t)
	r.pkgs.setHandler(func(_ context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
		out := fmt.Appendf(nil, `{"blob":%q}`, strings.Repeat("y", client.MaxToolbeltAnswer))
		return protocol.OperationCallResult{Output: protocol.Payload{Data: out}}, nil
	})
	if _, err := r.call(tokenA, "notes.add", `{}`, ""); codeOf(err) != protocol.CodeTooLarge {
		t.Fatalf("%v, want too_large", err)
	}
}

func TestOnlyPostCallIsServed(t *testing.T) {
	r := newRig(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", r.socket)
	}}}
	defer hc.CloseIdleConnections()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, client.ToolbeltCallPath, http.StatusMethodNotAllowed},
		{http.MethodPost, "/v1/other", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, "http://toolbelt"+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+tokenA)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %s, want %d", tc.method, tc.path, resp.Status, tc.status)
		}
	}
}

func TestListenIsOwnerOnlyAndReplacesOnlyAStaleSocket(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "state", SocketName)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket %v, %v; want a 0600 socket", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("state dir %v, want 0700", di.Mode())
	}
	// A live socket is not taken over.
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "already serves") {
		t.Fatalf("listen over a live toolbelt: %v", err)
	}
	// A dead one (a killed daemon's) is replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket should remain for the test: %v", err)
	}
	ln2, err := Listen(path)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	ln2.Close()
	// Something that is not a socket is left alone.
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("listen over a plain file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatal("the plain file was touched")
	}
}

func TestListenRefusesAStateDirOthersCanWrite(t *testing.T) {
	dir := shortDir(t)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(filepath.Join(state, SocketName)); err == nil {
		t.Fatal("listening in a world-writable directory succeeded")
	}
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(filepath.Join(state, SocketName))
	if err != nil {
		t.Fatalf("control, owner-only directory: %v", err)
	}
	ln.Close()
}

// The replay record is the store's: it outlives the server.
func TestReplayRecordIsInTheStore(t *testing.T) {
	r := newRig(t)
	if _, err := r.call(tokenA, "notes.add", `{"text":"kept"}`, "rq-kept"); err != nil {
		t.Fatal(err)
	}
	var res pebblekv.OpResult
	var found bool
	err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		res, found, err = rd.OpResult("notes", replayKey(execA.Work, "rq-kept"))
		return err
	})
	if err != nil || !found || res.Operation != "notes.add" || string(res.Output.Data) != `{"text":"kept"}` {
		t.Fatalf("record %+v found %v err %v", res, found, err)
	}
}
