package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
)

// TestWireTapShowsAnOperatorCallAndRedactsTheSecretItResolved: an
// operator's extension call reaches the probe as operation.call; the probe
// resolves a secret through the host. The tap, read with the CLI, holds
// the call and its answer with a latency, and the secret.resolve answer
// without the secret's value, while its request is kept whole.
func TestWireTapShowsAnOperatorCallAndRedactsTheSecretItResolved(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(e.Bins.OpenConduit, append(args, "--state", e.State)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, e.Log)
		}
		return string(out)
	}
	// A follower started before the call sees it as it passes.
	follow := exec.Command(e.Bins.OpenConduit, "extension", "tap", probe.Name, "--follow", "--after", fmt.Sprint(lastSeq(t, e)), "--state", e.State)
	followOut, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	followed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(followOut)
		var seen strings.Builder
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "← answer operation.call id=") {
				followed <- seen.String()
				return
			}
		}
		followed <- "the follower ended:\n" + seen.String()
	}()

	cli("extension", "call", probe.Name, "probe.call", "--scope", "alpha",
		"--input", `{"method":"secret.resolve","params":{"scope_id":"alpha","names":["s1"]}}`)

	select {
	case got := <-followed:
		if !strings.Contains(got, "→ request operation.call") || !strings.Contains(got, "← request secret.resolve") {
			t.Fatalf("extension tap --follow printed:\n%s", got)
		}
	case <-time.After(daemontest.Deadline):
		t.Fatalf("extension tap --follow did not print the call's answer within %s", daemontest.Deadline)
	}

	var entries []client.WireEntry
	sc := bufio.NewScanner(strings.NewReader(cli("extension", "tap", probe.Name, "--json")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var en client.WireEntry
		if err := json.Unmarshal(sc.Bytes(), &en); err != nil {
			t.Fatalf("tap --json line %q: %v", sc.Text(), err)
		}
		entries = append(entries, en)
	}
	find := func(dir, kind, method string) *client.WireEntry {
		for i := range entries {
			en := &entries[i]
			if en.Direction == dir && en.Kind == kind && en.Method == method {
				return en
			}
		}
		t.Fatalf("no %s %s %s in the tap:\n%+v", dir, kind, method, entries)
		return nil
	}
	req := find(client.WireToExtension, client.WireRequest, "operation.call")
	ans := find(client.WireFromExtension, client.WireAnswer, "operation.call")
	if ans.ID != req.ID || ans.Seq <= req.Seq || ans.LatencyMicros <= 0 || req.Size != len(req.Message) {
		t.Fatalf("operation.call: request %+v, answer %+v; want the answer after it, same id, with a latency", req, ans)
	}
	sreq := find(client.WireFromExtension, client.WireRequest, "secret.resolve")
	sans := find(client.WireToExtension, client.WireAnswer, "secret.resolve")
	if !sans.Redacted || strings.Contains(sans.Message, "one-7f3a") || sans.ID != sreq.ID {
		t.Fatalf("the secret.resolve answer was kept as %q (redacted %v)", sans.Message, sans.Redacted)
	}
	if sreq.Redacted || !strings.Contains(sreq.Message, `"s1"`) {
		t.Fatalf("negative control: the secret.resolve request %q should be kept whole", sreq.Message)
	}
	if !(req.Seq < sreq.Seq && sreq.Seq < sans.Seq && sans.Seq < ans.Seq) {
		t.Fatalf("order: call %d, resolve %d, its answer %d, call's answer %d", req.Seq, sreq.Seq, sans.Seq, ans.Seq)
	}

	text := cli("extension", "tap", probe.Name)
	for _, want := range []string{"→ request operation.call id=" + req.ID + " ", "← answer operation.call id=" + ans.ID + " ", "→ answer secret.resolve id=" + sans.ID + " ", "(result redacted)"} {
		if !strings.Contains(text, want) {
			t.Errorf("extension tap prints no %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "one-7f3a") {
		t.Errorf("the text view shows a secret:\n%s", text)
	}
	// Negative control: an unknown package is an error, not an empty tap.
	if out, err := exec.Command(e.Bins.OpenConduit, "extension", "tap", "nosuch", "--state", e.State).CombinedOutput(); err == nil || !strings.Contains(string(out), "nosuch") {
		t.Fatalf("tap of an unknown package: %v\n%s", err, out)
	}
}

// lastSeq is the newest sequence number in the probe's tap now.
func lastSeq(t *testing.T, e *daemontest.Env) uint64 {
	t.Helper()
	var after uint64
	for {
		p, err := e.C.Wire(context.Background(), probe.Name, client.WireQuery{After: after})
		if err != nil {
			t.Fatal(err)
		}
		if after = p.Next; !p.More {
			return after
		}
	}
}
