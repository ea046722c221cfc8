package daemon_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/host/toolbelt"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// emitConfig is alpha of daemontest.Config, with binding agent granting
// probe.emit.
const emitConfig = `{
  "scopes": [
    {"id": "alpha",
     "entries": [{"name": "p1", "type": "probe", "connection": "api1", "secrets": ["s1"]}],
     "secret_refs": {"s1": "env:OC_TEST_S1"},
     "connections": ["api1"],
     "bindings": [{"name": "agent", "toolbelt": "cli", "operations": ["probe.emit"]}]}
  ],
  "connections": [{"name": "api1", "type": "probe-api", "secret_refs": {"token": "env:OC_TEST_TOKEN"}}]
}`

// TestToolbeltEmitThroughTheRealProbeCommitsItsRecordsOnce: a running
// execution calls the probe's emit operation through the daemon's
// toolbelt; the probe's process plans the Event over operation.emit and
// notes it over emit.commit inside the accepting transaction; a retry is
// replayed; a refused emit.commit leaves neither Event nor note.
func TestToolbeltEmitThroughTheRealProbeCommitsItsRecordsOnce(t *testing.T) {
	e := daemontest.New(t, bins)
	e.WriteConfig(emitConfig)
	d, err := daemon.Start(context.Background(), daemon.Options{
		StateDir: e.State, ConfigFile: e.Config, ConfigNamed: true, Self: bins.OpenConduit,
		Environ: append(os.Environ(), daemontest.Secrets...),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	work, exec := pebblekv.NewWorkID(), pebblekv.NewExecutionID()
	token, hash := pebblekv.NewToken()
	now := time.Now().UTC()
	if err := d.DB().Update(func(tx *pebblekv.Tx) error {
		if err := tx.PutWork(pebblekv.Work{ID: work, Scope: "alpha", Kind: "manual", Keys: []string{"e-1"}, State: pebblekv.WorkRunning, Created: now, Updated: now}); err != nil {
			return err
		}
		return tx.PutExecution(pebblekv.Execution{ID: exec, Work: work, Scope: "alpha", Binding: "agent", Attempt: 1, Package: "probe",
			Executor: "probe-exec", Epoch: 1, TokenHash: hash, State: pebblekv.ExecRunning, Started: now})
	}); err != nil {
		t.Fatal(err)
	}
	tb := client.NewToolbelt(filepath.Join(e.State, toolbelt.SocketName), token)
	call := func(rq string, in probe.Emit) (client.ToolbeltAnswer, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), daemontest.Deadline)
		defer cancel()
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		// The probe may still be starting: unavailable is retried, as the
		// call command does.
		for {
			ans, _, err := tb.Call(ctx, client.ToolbeltRequest{Operation: "probe.emit", Input: jsontext.Value(raw), RequestID: rq})
			if codeOfClient(err) != protocol.CodeUnavailable || ctx.Err() != nil {
				return ans, err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	state := func(eventID string) (seq uint64, note string) {
		t.Helper()
		if err := d.DB().View(func(rd *pebblekv.Reader) (err error) {
			if seq, err = rd.LatestSequence(); err != nil || eventID == "" {
				return err
			}
			v, _, _, err := rd.KVGet(probe.Name, probe.EmittedKey(eventID))
			note = string(v)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return seq, note
	}

	first, err := call("rq-emit-1", probe.Emit{})
	if err != nil {
		t.Fatal(err)
	}
	var got toolbelt.EmitAnswer
	if err := json.Unmarshal(first.Output, &got); err != nil {
		t.Fatal(err)
	}
	if _, note := state(got.EventID); !got.Added || got.Type != "probe.seen" || note == "" || note != jsonUint(got.Sequence) {
		t.Fatalf("emitted %+v with note %q; want a new probe.seen Event noted under its sequence", got, note)
	}
	before, _ := state("")
	again, err := call("rq-emit-1", probe.Emit{})
	if err != nil || !again.Replayed || string(again.Output) != string(first.Output) {
		t.Fatalf("retry: %s replayed %v, %v; want %s replayed", again.Output, again.Replayed, err, first.Output)
	}
	if seq, _ := state(""); seq != before {
		t.Fatalf("the retry moved the log from %d to %d", before, seq)
	}
	// emit.commit refuses: the call fails with its code, and the Event
	// the host would have named is neither accepted nor noted.
	_, err = call("rq-emit-2", probe.Emit{Delivery: "refused-1", Fail: true})
	wantClientCode(t, "a refused emit.commit", err, protocol.CodeConflict, "told to refuse")
	id := digest.EmittedEventID(probe.Name, "refused-1")
	if seq, note := state(id); seq != before || note != "" {
		t.Fatalf("a refused emission: log at %d (was %d), note %q; want nothing", seq, before, note)
	}
	var found bool
	if err := d.DB().View(func(rd *pebblekv.Reader) (err error) { _, found, err = rd.Event(id); return err }); err != nil || found {
		t.Fatalf("the refused Event is in the log: found %v, %v", found, err)
	}
}

func codeOfClient(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

func jsonUint(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
