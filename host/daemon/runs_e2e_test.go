package daemon_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// runFixture is a daemon run in process (so the test can write the
// records the scheduler would), with the probe package running in scope
// alpha: one waiting Work with two attempts of the probe's executor (the
// first failed with exit code 3, the second running) and the active Wait
// the probe declared.
type runFixture struct {
	e        *daemontest.Env
	d        *daemon.Daemon
	work     string
	settled  string
	running  string
	wait     string
	deadline time.Time
}

func startRunFixture(t *testing.T) *runFixture {
	t.Helper()
	e := daemontest.New(t, bins)
	d, err := daemon.Start(context.Background(), daemon.Options{
		StateDir:    e.State,
		ConfigFile:  e.Config,
		ConfigNamed: true,
		Served:      map[string]*protocol.Manifest{hello.Name: hello.Extension().Manifest},
		Self:        bins.OpenConduit,
		Environ:     append(os.Environ(), "OC_TEST_S1=one-7f3a", "OC_TEST_TOKEN=tok-5e8f"),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := &runFixture{e: e, d: d, work: pebblekv.NewWorkID(), settled: pebblekv.NewExecutionID(), running: pebblekv.NewExecutionID(), wait: pebblekv.NewWaitID()}
	now := time.Now().UTC().Truncate(time.Millisecond)
	three := 3
	_, hash := pebblekv.NewToken()
	err = d.DB().Update(func(tx *pebblekv.Tx) error {
		if err := tx.PutWork(pebblekv.Work{ID: f.work, Scope: "alpha", Kind: "manual", Keys: []string{"run-1"}, State: pebblekv.WorkWaiting, Created: now, Updated: now}); err != nil {
			return err
		}
		for _, x := range []pebblekv.Execution{
			{ID: f.settled, Work: f.work, Scope: "alpha", Attempt: 1, Package: "probe", Executor: "probe-exec", Epoch: 1, State: pebblekv.ExecSettled,
				Outcome: protocol.OutcomeFailed, Reason: "the command exited 3", ExitCode: &three, Started: now.Add(-time.Minute), Settled: now.Add(-30 * time.Second)},
			{ID: f.running, Work: f.work, Scope: "alpha", Attempt: 2, Package: "probe", Executor: "probe-exec", Epoch: 2, TokenHash: hash,
				State: pebblekv.ExecRunning, Wait: f.wait, Started: now},
		} {
			if err := tx.PutExecution(x); err != nil {
				return err
			}
		}
		return tx.PutWait(pebblekv.Wait{ID: f.wait, Work: f.work, Scope: "alpha", Execution: f.running, Owner: "probe",
			Description: "CI on PR #7", Progress: "2 of 4 checks", Due: now.Add(time.Hour), State: pebblekv.WaitActive, Created: now, Updated: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeArtifact has the probe write data as an artifact of execution x
// through artifact.*, in chunks of at most chunk bytes, and returns its
// ID.
func (f *runFixture) writeArtifact(t *testing.T, x, name string, data []byte, chunk int) string {
	t.Helper()
	var c protocol.ArtifactCreateResult
	f.hostCall(t, protocol.MethodArtifactCreate, protocol.ArtifactCreateParams{Execution: x, Name: name, MediaType: "text/plain"}, &c)
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		f.hostCall(t, protocol.MethodArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: int64(off), Data: data[off:end]}, nil)
	}
	sum := sha256.Sum256(data)
	f.hostCall(t, protocol.MethodArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact, Digest: hex.EncodeToString(sum[:])}, nil)
	return c.Artifact
}

// hostCall has the probe call method and wants a result.
func (f *runFixture) hostCall(t *testing.T, method string, params, out any) {
	t.Helper()
	a := f.e.HostCall("alpha", method, params)
	if a.Code != "" {
		t.Fatalf("%s: %s %s", method, a.Code, a.Message)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			t.Fatal(err)
		}
	}
}

func wantClientCode(t *testing.T, what string, err error, code, says string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != code || !strings.Contains(ce.Message, says) {
		t.Fatalf("%s: %v, want %s saying %q", what, err, code, says)
	}
}

// TestOperatorReadsAttemptsArtifactsAndWaitsOfRunningWork: what an
// executor's package wrote through artifact.* is listed under its Work and
// read back whole, checked against its digest, through the API and the
// binary; the Work's attempts and its Wait show in work show and the
// listings; unknown IDs are refused.
func TestOperatorReadsAttemptsArtifactsAndWaitsOfRunningWork(t *testing.T) {
	f := startRunFixture(t)
	ctx := context.Background()
	c := f.e.C
	transcript := []byte(strings.Repeat("the build step passed\n", 30000)) // 660000 bytes: three chunks
	art := f.writeArtifact(t, f.running, "transcript.txt", transcript, protocol.MaxChunkBytes)
	small := f.writeArtifact(t, f.settled, "exit.txt", []byte("exit 3\n"), 64)

	// The committed bytes are one owner-only file named by their digest.
	sum := sha256.Sum256(transcript)
	blob := filepath.Join(f.e.State, "artifacts", "sha256", hex.EncodeToString(sum[:]))
	if fi, err := os.Stat(blob); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != int64(len(transcript)) {
		t.Fatalf("the content file %s: %v %v", blob, fi, err)
	}

	xs, err := c.WorkExecutions(ctx, f.work)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs.Executions) != 2 || xs.Executions[0].ID != f.settled || xs.Executions[0].Outcome != protocol.OutcomeFailed ||
		xs.Executions[0].ExitCode == nil || *xs.Executions[0].ExitCode != 3 || xs.Executions[1].Epoch != 2 || xs.Executions[1].State != pebblekv.ExecRunning {
		t.Fatalf("executions: %+v", xs)
	}

	arts, err := c.WorkArtifacts(ctx, f.work)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts.Artifacts) != 2 || arts.Artifacts[0].ID != art || arts.Artifacts[0].Size != int64(len(transcript)) ||
		arts.Artifacts[0].Digest != hex.EncodeToString(sum[:]) || arts.Artifacts[1].ID != small || arts.Artifacts[1].Execution != f.settled {
		t.Fatalf("artifacts: %+v", arts)
	}
	meta, err := c.Artifact(ctx, art)
	if err != nil || meta.Name != "transcript.txt" || meta.Package != "probe" || meta.Work != f.work {
		t.Fatalf("artifact: %+v %v", meta, err)
	}
	var got strings.Builder
	n, digest, err := c.ArtifactContent(ctx, art, &got)
	if err != nil || n != int64(len(transcript)) || digest != meta.Digest || got.String() != string(transcript) {
		t.Fatalf("content: %d bytes, digest %s, %v", n, digest, err)
	}

	waits, err := c.Waits(ctx, client.WaitsQuery{})
	if err != nil || len(waits.Waits) != 1 || waits.Waits[0].ID != f.wait || waits.Waits[0].Progress != "2 of 4 checks" || waits.Next != "" {
		t.Fatalf("waits: %+v %v", waits, err)
	}
	detail, err := c.WorkDetail(ctx, f.work)
	if err != nil || len(detail.Executions) != 2 || detail.Wait == nil || detail.Wait.ID != f.wait {
		t.Fatalf("work detail: %+v %v", detail, err)
	}

	// Refusals: unknown IDs, a Work that does not exist, a page cursor
	// naming no Wait.
	_, err = c.Artifact(ctx, "a_nosuch")
	wantClientCode(t, "an unknown artifact", err, protocol.CodeNotFound, "no committed artifact")
	_, _, err = c.ArtifactContent(ctx, "a_nosuch", io.Discard)
	wantClientCode(t, "an unknown artifact's content", err, protocol.CodeNotFound, "no committed artifact")
	_, err = c.WorkArtifacts(ctx, "w_nosuch")
	wantClientCode(t, "an unknown Work's artifacts", err, protocol.CodeNotFound, "no Work")
	_, err = c.WorkExecutions(ctx, "w_nosuch")
	wantClientCode(t, "an unknown Work's executions", err, protocol.CodeNotFound, "no Work")
	_, err = c.Waits(ctx, client.WaitsQuery{After: "wt_nosuch"})
	wantClientCode(t, "a cursor naming no Wait", err, protocol.CodeInvalid, "no Wait")

	// The binary: listing, fetching by ID and by name, show.
	code, out, errs := cli(t, f.e, "work", "artifacts", f.work)
	if code != 0 || !strings.Contains(out, "transcript.txt") || !strings.Contains(out, art) || !strings.Contains(out, "660000") {
		t.Fatalf("work artifacts: %d %s %s", code, out, errs)
	}
	var listed client.Artifacts
	cliJSON(t, f.e, &listed, "work", "artifacts", f.work)
	if len(listed.Artifacts) != 2 || listed.Artifacts[0].Digest != meta.Digest {
		t.Fatalf("work artifacts --json: %+v", listed)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "transcript.txt")
	if code, out, errs := cli(t, f.e, "work", "artifact", art, "--out", dst); code != 0 || !strings.Contains(out, meta.Digest) {
		t.Fatalf("work artifact --out: %d %s %s", code, out, errs)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != string(transcript) {
		t.Fatalf("the fetched file: %d bytes, %v", len(b), err)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Errorf("the fetched file is %v, want 0600", fi.Mode().Perm())
	}
	if code, _, errs := cli(t, f.e, "work", "artifact", art, "--out", dst); code == 0 || !strings.Contains(errs, "exists") {
		t.Fatalf("fetching over an existing file: %d %s", code, errs)
	}
	if code, out, errs := cli(t, f.e, "work", "artifacts", f.work, "--get", "exit.txt"); code != 0 || out != "exit 3\n" {
		t.Fatalf("work artifacts --get: %d %q %s", code, out, errs)
	}
	if code, _, errs := cli(t, f.e, "work", "artifacts", f.work, "--get", "nosuch.txt"); code == 0 || !strings.Contains(errs, "no artifact named") {
		t.Fatalf("--get of a name the Work has not: %d %s", code, errs)
	}
	code, out, errs = cli(t, f.e, "work", "show", f.work)
	if code != 0 || !strings.Contains(out, "attempts  2") || !strings.Contains(out, "the command exited 3") ||
		!strings.Contains(out, "CI on PR #7; 2 of 4 checks") {
		t.Fatalf("work show: %d %s %s", code, out, errs)
	}
	code, out, errs = cli(t, f.e, "work", "waits")
	if code != 0 || !strings.Contains(out, f.wait) || !strings.Contains(out, "probe") {
		t.Fatalf("work waits: %d %s %s", code, out, errs)
	}
}

// TestOperatorControlsPassTheEnginesAnswerThrough: interrupt, inject, stop
// and live of a known Work reach the engine, whose answer (unsupported: the
// probe's executor declares none of them) comes back with its code and
// message through the API and the binary; an unknown Work is not_found before the engine, and
// a malformed inject is invalid.
func TestOperatorControlsPassTheEnginesAnswerThrough(t *testing.T) {
	f := startRunFixture(t)
	ctx := context.Background()
	c := f.e.C
	for _, control := range client.Controls {
		t.Run(control, func(t *testing.T) {
			_, err := c.ControlWork(ctx, f.work, control, map[bool]string{true: "also check the logs"}[control == client.ControlInject])
			wantClientCode(t, control, err, protocol.CodeUnsupported, "does not declare "+control)
			_, err = c.ControlWork(ctx, "w_nosuch", control, map[bool]string{true: "x"}[control == client.ControlInject])
			wantClientCode(t, control+" of an unknown Work", err, protocol.CodeNotFound, "no Work")
		})
	}
	_, err := c.ControlWork(ctx, f.work, client.ControlInject, "")
	wantClientCode(t, "inject without text", err, protocol.CodeInvalid, "inject needs text")
	_, err = c.WorkLive(ctx, f.work, 100)
	wantClientCode(t, "live", err, protocol.CodeUnsupported, "does not declare live")
	_, err = c.WorkLive(ctx, "w_nosuch", 100)
	wantClientCode(t, "live of an unknown Work", err, protocol.CodeNotFound, "no Work")

	for _, args := range [][]string{{"interrupt", f.work}, {"inject", f.work, "also check the logs"}, {"stop", f.work}, {"live", f.work}} {
		code, _, errs := cli(t, f.e, append([]string{"work"}, args...)...)
		if code != 1 || !strings.Contains(errs, "does not declare "+args[0]) {
			t.Errorf("work %v: exit %d, stderr %q; want 1 and the engine's message", args, code, errs)
		}
	}
}
