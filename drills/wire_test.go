package drills

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/badpeer"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// The wire drills point the real daemon at badpeer, an extension that
// breaks the protocol when asked, and check that each bad message gets the
// treatment docs/protocol.md states, that a reader that stalls fails the
// connection at the stated write deadline, and that nothing over the
// message bound is ever written, on the host's side or the SDK's.

var (
	wireBuild    sync.Once
	wireBinary   string
	wireBuildErr error
)

// wireBadpeer builds badpeer once, beside the other binaries.
func wireBadpeer(t *testing.T) string {
	t.Helper()
	wireBuild.Do(func() {
		wireBinary = filepath.Join(filepath.Dir(bins.OpenConduit), "badpeer-extension")
		cmd := exec.Command("go", "build", "-o", wireBinary, "github.com/open-conduit/open-conduit/fixtures/badpeer/cmd/badpeer-extension")
		out, err := cmd.CombinedOutput()
		if err != nil {
			wireBuildErr = err
			wireBinary = string(out)
		}
	})
	if wireBuildErr != nil {
		t.Fatalf("go build badpeer (the drills need the go command): %v\n%s", wireBuildErr, wireBinary)
	}
	return wireBinary
}

// wireDaemon runs a daemon with badpeer installed in mode and waits until
// it runs.
func wireDaemon(t *testing.T, mode string) *daemontest.Env {
	t.Helper()
	e := daemontest.New(t, bins)
	dir := filepath.Join(filepath.Dir(e.Config), "extensions", badpeer.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(wireBadpeer(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, badpeer.Name+"-extension"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest, err := badpeer.Extension(mode).Manifest.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	e.Start()
	e.Eventually("badpeer running", func() bool { return e.Extension(badpeer.Name).State == "running" })
	return e
}

// wireAct asks badpeer to do something, as the operator calling it.
func wireAct(e *daemontest.Env, a badpeer.Act) (client.CallResult, badpeer.Report, error) {
	in := map[string]any{"act": a.Act}
	if a.Bytes > 0 {
		in["bytes"] = a.Bytes
	}
	if a.Pad != "" {
		in["pad"] = a.Pad
	}
	res, err := e.C.Call(context.Background(), badpeer.Name, client.CallRequest{Operation: badpeer.Operation, Input: in})
	var r badpeer.Report
	if err == nil && res.Code == "" {
		err = json.Unmarshal(res.Output.Data, &r)
	}
	return res, r, err
}

// wireSameProcess fails the drill unless badpeer still runs as pid, never
// restarted: the connection stayed up.
func wireSameProcess(t *testing.T, e *daemontest.Env, pid int, after string) {
	t.Helper()
	if x := e.Extension(badpeer.Name); x.PID != pid || x.Restarts != 0 || x.State != "running" {
		t.Fatalf("after %s badpeer is %s as pid %d after %d restarts (was pid %d): the connection did not stay up: %s",
			after, x.State, x.PID, x.Restarts, pid, x.LastError)
	}
	res, r, err := wireAct(e, badpeer.Act{Act: badpeer.ActEcho, Pad: "abc"})
	if err != nil || res.Code != "" || r.Bytes != 3 {
		t.Fatalf("after %s a good call failed: %v %+v", after, err, res)
	}
}

// wireRefusal checks the host's answer to a message it refused: id null,
// -32600, data.code parse_error, a message that says why.
func wireRefusal(t *testing.T, answer jsontext.Value, says string) {
	t.Helper()
	var a struct {
		ID    jsontext.Value `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || string(a.ID) != "null" || a.Error == nil ||
		a.Error.Code != protocol.RPCInvalidRequest || a.Error.Data.Code != protocol.CodeParse || !strings.Contains(a.Error.Message, says) {
		t.Fatalf("the host answered %s, want one error with id null, -32600, data.code parse_error, saying %q", answer, says)
	}
}

// TestDrillWireBadPeerMessagesGetTheirDocumentedTreatment has badpeer send
// the host each bad message in turn and checks the treatment: a malformed
// answer fails its call alone, saying what was wrong; a second answer and an
// answer to an id never sent are logged and ignored; a batch and a request
// whose id is null are refused with a null-id error and never run; through
// all of them the same process keeps serving. Then a torn frame, which the
// rule says ends the connection: the crash report quotes it.
func TestDrillWireBadPeerMessagesGetTheirDocumentedTreatment(t *testing.T) {
	t.Parallel()
	e := wireDaemon(t, badpeer.ModeRaw)
	pid := e.Extension(badpeer.Name).PID
	rounds := scale(1, 10)
	for round := 0; round < rounds; round++ {
		for _, tc := range []struct {
			act   string
			check func(t *testing.T, res client.CallResult, r badpeer.Report)
		}{
			{badpeer.ActMalformedResult, func(t *testing.T, res client.CallResult, _ badpeer.Report) {
				if res.Code != protocol.CodeInvalid || !strings.Contains(res.Message, "a result that does not decode") || strings.Contains(res.Message, "broke") {
					t.Fatalf("a malformed answer: %s %q", res.Code, res.Message)
				}
			}},
			{badpeer.ActBoth, func(t *testing.T, res client.CallResult, _ badpeer.Report) {
				if res.Code != protocol.CodeInvalid || !strings.Contains(res.Message, "both a result and an error") {
					t.Fatalf("an answer with a result and an error: %s %q", res.Code, res.Message)
				}
			}},
			{badpeer.ActTwice, func(t *testing.T, res client.CallResult, r badpeer.Report) {
				if res.Code != "" || r.Bytes != 1 {
					t.Fatalf("the first of two answers must count: %+v %+v", res, r)
				}
				e.Eventually("the second answer logged", func() bool { return strings.Contains(e.Log.String(), "a second answer to id") })
			}},
			{badpeer.ActUnknownID, func(t *testing.T, res client.CallResult, _ badpeer.Report) {
				if res.Code != "" {
					t.Fatalf("the call itself: %+v", res)
				}
				e.Eventually("the stray answer logged", func() bool { return strings.Contains(e.Log.String(), "an answer to an id this side never sent") })
			}},
			{badpeer.ActBatch, func(t *testing.T, res client.CallResult, r badpeer.Report) {
				wireRefusal(t, r.Answer, "batch")
				if r.Written {
					t.Fatal("the batch's kv.commit ran")
				}
			}},
			{badpeer.ActNullID, func(t *testing.T, res client.CallResult, r badpeer.Report) {
				wireRefusal(t, r.Answer, "never null")
				if r.Written {
					t.Fatal("the kv.commit with a null id ran")
				}
			}},
		} {
			res, r, err := wireAct(e, badpeer.Act{Act: tc.act})
			if err != nil {
				t.Fatalf("%s: %v", tc.act, err)
			}
			tc.check(t, res, r)
			wireSameProcess(t, e, pid, tc.act)
		}
	}
	res, _, err := wireAct(e, badpeer.Act{Act: badpeer.ActTorn})
	if err != nil || res.Code != protocol.CodeTransport || !strings.Contains(res.Message, "not a JSON-RPC message") || !strings.Contains(res.Message, "outp") {
		t.Fatalf("a torn frame must end the connection, quoted: %v %+v", err, res)
	}
	e.Eventually("badpeer restarted after the torn frame", func() bool {
		x := e.Extension(badpeer.Name)
		return x.Restarts >= 1 && x.State == "running" && x.PID != pid
	})
	report(t, "%d rounds of 6 bad messages, each treated by its rule with the connection up (pid %d throughout); a torn frame ended it, quoted", rounds, pid)
}

// TestDrillWireStalledReaderFailsAtTheWriteDeadline has badpeer stop
// reading, then queues several calls of 256 KiB (more than a pipe holds:
// the host asks 1 MiB of each protocol pipe) to it. The first write that blocks for the 30 s write deadline ends the
// connection: every queued call fails with that one blocked write (none
// waits out a deadline of its own, which is how the connection used to take
// a minute and more to fail), and badpeer is restarted with the blocked
// write as its crash's cause.
func TestDrillWireStalledReaderFailsAtTheWriteDeadline(t *testing.T) {
	t.Parallel()
	e := wireDaemon(t, badpeer.ModeRaw)
	pid := e.Extension(badpeer.Name).PID
	if res, _, err := wireAct(e, badpeer.Act{Act: badpeer.ActStopReading}); err != nil || res.Code != "" {
		t.Fatalf("stop reading: %v %+v", err, res)
	}
	calls := scale(6, 8)
	pad := strings.Repeat("p", 256<<10)
	start := time.Now()
	results := make(chan client.CallResult, calls)
	for i := 0; i < calls; i++ {
		go func() {
			res, _, err := wireAct(e, badpeer.Act{Act: badpeer.ActEcho, Pad: pad})
			if err != nil {
				res = client.CallResult{Code: "client", Message: err.Error()}
			}
			results <- res
		}()
	}
	var first client.CallResult
	for i := 0; i < calls; i++ {
		var res client.CallResult
		select {
		case res = <-results:
		case <-time.After(daemontest.Deadline + 30*time.Second):
			t.Fatalf("%d of %d calls to a stalled reader still wait", calls-i, calls)
		}
		if i == 0 {
			first = res
		}
		if res.Code != protocol.CodeTransport || !strings.Contains(res.Message, "blocked for 30s") || res.Message != first.Message {
			t.Fatalf("call %d to a stalled reader: %s %q; want every call failed by the one write blocked for 30s: %q", i+1, res.Code, res.Message, first.Message)
		}
	}
	failed := time.Since(start)
	e.Eventually("badpeer restarted after the blocked write", func() bool {
		x := e.Extension(badpeer.Name)
		return x.Restarts >= 1 && x.State == "running" && x.PID != pid
	})
	restarted := time.Since(start)
	if x := e.Extension(badpeer.Name); !strings.Contains(x.LastError, "blocked for 30s") || !strings.Contains(x.LastError, "keeps reading its stdin") ||
		strings.Contains(x.LastError, "only protocol messages to stdout") {
		t.Fatalf("the crash report does not name the blocked write and what to change: %s", x.LastError)
	}
	report(t, "%d calls of 256 KiB to a reader that stopped: all failed by the one blocked write %s after they were sent (write deadline 30 s); badpeer running again after %s",
		calls, failed.Round(100*time.Millisecond), restarted.Round(100*time.Millisecond))
}

// TestDrillWireOversizedMessagesRefusedBeforeTheWire runs badpeer on the
// SDK and has it send a 12.5 MiB KV value (over 16 MiB as base64 on the
// line) and answer with more than 16 MiB: the SDK refuses both with
// too_large before anything is written, and the same process goes on
// serving. A 1 MiB answer is the negative control.
func TestDrillWireOversizedMessagesRefusedBeforeTheWire(t *testing.T) {
	t.Parallel()
	e := wireDaemon(t, badpeer.ModeSDK)
	pid := e.Extension(badpeer.Name).PID

	res, r, err := wireAct(e, badpeer.Act{Act: badpeer.ActBigCommit, Bytes: 25 << 19})
	if err != nil || res.Code != "" || r.Code != protocol.CodeTooLarge || r.Written {
		t.Fatalf("a 12.5 MiB value: %v %+v %+v; want the commit refused too_large and nothing written", err, res, r)
	}
	wireSameProcess(t, e, pid, "a 12.5 MiB value")
	commitRefusal := r.Message

	res, _, err = wireAct(e, badpeer.Act{Act: badpeer.ActBigAnswer, Bytes: protocol.MaxMessageBytes})
	if err != nil || res.Code != protocol.CodeTooLarge || !strings.Contains(res.Message, "operation.call: the answer is") ||
		!strings.Contains(res.Message, "16777216-byte bound") {
		t.Fatalf("a 16 MiB answer: %v %+v; want too_large naming the method, its size and the bound", err, res)
	}
	wireSameProcess(t, e, pid, "a 16 MiB answer")
	answerRefusal := res.Message

	res, r, err = wireAct(e, badpeer.Act{Act: badpeer.ActBigAnswer, Bytes: 1 << 20})
	if err != nil || res.Code != "" || len(r.Data) != 1<<20 {
		t.Fatalf("negative control, a 1 MiB answer: %v %+v (%d bytes)", err, res, len(r.Data))
	}
	report(t, "SDK side: a 12.5 MiB value refused (%s); a 16 MiB answer refused (%s); the extension kept serving as pid %d",
		commitRefusal, answerRefusal, pid)
}
