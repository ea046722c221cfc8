package memhost_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// runner is an extension with an executor and a wait operation, so the
// gate lets execution.persist_recovery and wait.progress through.
func runner() *protocol.Manifest {
	return &protocol.Manifest{Name: "runner", Protocol: []int{protocol.Version}, Command: []string{"runner"}, Provides: protocol.Provides{
		Executors:  []protocol.Executor{{Name: "shell"}},
		Operations: []protocol.Operation{{Name: "await", Kind: protocol.OperationWait}},
	}}
}

// connect serves h over two OS pipes behind its gate and returns the
// extension's side.
func connect(t *testing.T, h *memhost.Host) *jsonrpc.Conn {
	t.Helper()
	hostR, extW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	host := jsonrpc.New(hostR, hostW, jsonrpc.Options{Peer: "extension runner", Handlers: h.Table(), Gate: h.Gate})
	conn := jsonrpc.New(extR, extW, jsonrpc.Options{Peer: "host"})
	t.Cleanup(func() {
		_ = conn.Close()
		_ = host.Close()
	})
	return conn
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := protocol.CodeOf(err); got != code {
		t.Fatalf("%v: code %q, want %q", err, got, code)
	}
}

// TestMemhostArtifactsFollowTheDaemonsRules: an artifact naming a held
// execution is listed under its Work; chunks at the wrong offset and a
// wrong digest or CRC-32 are conflicts that change nothing; an unknown execution is
// not_found; a commit is retried with the same answer.
func TestMemhostArtifactsFollowTheDaemonsRules(t *testing.T) {
	h := memhost.New("runner", memhost.WithManifest(runner()))
	h.PutExecution(protocol.ExecutionRef{Execution: "x_1", Epoch: 1}, "w_1")
	conn := connect(t, h)
	ctx := context.Background()

	_, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Execution: "x_other", Name: "out"})
	wantCode(t, err, protocol.CodeNotFound)
	_, err = jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Name: "two\nlines"})
	wantCode(t, err, protocol.CodeInvalid)

	c, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Execution: "x_1", Name: "out.txt", MediaType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Data: []byte("hello ")}); err != nil {
		t.Fatal(err)
	}
	_, err = jsonrpc.Invoke(ctx, conn, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Data: []byte("hello ")})
	wantCode(t, err, protocol.CodeConflict)
	_, err = jsonrpc.Invoke(ctx, conn, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 6, Data: make([]byte, protocol.MaxChunkBytes+1)})
	wantCode(t, err, protocol.CodeInvalid)
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 6, Data: []byte("world")}); err != nil {
		t.Fatal(err)
	}
	_, err = jsonrpc.Invoke(ctx, conn, protocol.ArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact, Digest: strings.Repeat("0", 64)})
	wantCode(t, err, protocol.CodeConflict)
	if a := h.Artifacts()[c.Artifact]; a.Committed {
		t.Fatal("committed after a wrong digest")
	}
	_, err = jsonrpc.Invoke(ctx, conn, protocol.ArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact, CRC32: protocol.FormatCRC32(crc32.ChecksumIEEE([]byte("hello")))})
	wantCode(t, err, protocol.CodeConflict)
	if a := h.Artifacts()[c.Artifact]; a.Committed {
		t.Fatal("committed after a wrong crc32")
	}
	sum := sha256.Sum256([]byte("hello world"))
	res, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCommit, protocol.ArtifactCommitParams{
		Artifact: c.Artifact, Digest: hex.EncodeToString(sum[:]), CRC32: protocol.FormatCRC32(crc32.ChecksumIEEE([]byte("hello world")))})
	if err != nil || res.Size != 11 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	again, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact})
	if err != nil || again != res {
		t.Fatalf("commit again: %+v %v, want %+v", again, err, res)
	}
	a := h.Artifacts()[c.Artifact]
	if !a.Committed || !bytes.Equal(a.Data, []byte("hello world")) || a.Work != "w_1" || a.Execution != "x_1" || a.MediaType != "text/plain" {
		t.Fatalf("the artifact held: %+v", a)
	}
}

// TestMemhostCreateOverTheOpenLimitIsOverloaded: the daemon's bound on
// open writers, and an abort makes room.
func TestMemhostCreateOverTheOpenLimitIsOverloaded(t *testing.T) {
	h := memhost.New("runner")
	conn := connect(t, h)
	ctx := context.Background()
	var first string
	for i := range protocol.MaxOpenArtifacts {
		c, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Name: "out"})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if first == "" {
			first = c.Artifact
		}
	}
	_, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Name: "out"})
	wantCode(t, err, protocol.CodeOverloaded)
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactAbort, protocol.ArtifactAbortParams{Artifact: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Name: "out"}); err != nil {
		t.Fatalf("create after an abort: %v", err)
	}
}

// TestMemhostPersistRecoveryIsFencedByTheLease: metadata is kept for a
// held execution at its epoch; another epoch is conflict and an unknown
// execution not_found, each keeping what was there; over the bound is
// too_large.
func TestMemhostPersistRecoveryIsFencedByTheLease(t *testing.T) {
	h := memhost.New("runner", memhost.WithManifest(runner()))
	h.PutExecution(protocol.ExecutionRef{Execution: "x_1", Epoch: 2}, "w_1")
	conn := connect(t, h)
	ctx := context.Background()
	kept := jsontext.Value(`{"pid":42}`)
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.ExecutionPersistRecovery, protocol.ExecutionPersistRecoveryParams{
		ExecutionRef: protocol.ExecutionRef{Execution: "x_1", Epoch: 2}, Recovery: kept}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		execution string
		epoch     uint64
		recovery  jsontext.Value
		code      string
	}{
		{"a superseded epoch", "x_1", 1, jsontext.Value(`{"pid":7}`), protocol.CodeConflict},
		{"an unknown execution", "x_2", 2, jsontext.Value(`{"pid":7}`), protocol.CodeNotFound},
		{"over the bound", "x_1", 2, jsontext.Value(`"` + strings.Repeat("x", protocol.MaxRecoveryBytes) + `"`), protocol.CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonrpc.Invoke(ctx, conn, protocol.ExecutionPersistRecovery, protocol.ExecutionPersistRecoveryParams{
				ExecutionRef: protocol.ExecutionRef{Execution: tt.execution, Epoch: tt.epoch}, Recovery: tt.recovery})
			wantCode(t, err, tt.code)
			if x, _ := h.Execution("x_1"); !bytes.Equal(x.Recovery, kept) {
				t.Fatalf("the metadata is now %s, want %s", x.Recovery, kept)
			}
		})
	}
}

// TestMemhostWaitProgressOnlyFromTheWaitsOwner: the owner's line is kept,
// cut to one line within the bound; another owner's Wait is unauthorized
// and a Work with no Wait not_found, each leaving the line alone.
func TestMemhostWaitProgressOnlyFromTheWaitsOwner(t *testing.T) {
	h := memhost.New("runner", memhost.WithManifest(runner()))
	h.PutWait("w_1", "runner")
	h.PutWait("w_2", "other")
	conn := connect(t, h)
	ctx := context.Background()
	long := strings.Repeat("é", protocol.MaxWaitProgress) + "\nsecond line"
	if _, err := jsonrpc.Invoke(ctx, conn, protocol.WaitProgress, protocol.WaitProgressParams{Work: "w_1", Progress: long}); err != nil {
		t.Fatal(err)
	}
	w, _ := h.Wait("w_1")
	if want := protocol.CutLine(long, protocol.MaxWaitProgress); w.Progress != want || len(w.Progress) > protocol.MaxWaitProgress || strings.Contains(w.Progress, "\n") {
		t.Fatalf("progress %q, want %q", w.Progress, want)
	}
	tests := []struct {
		name, work, code string
	}{
		{"another package's Wait", "w_2", protocol.CodeUnauthorized},
		{"a Work with no Wait", "w_3", protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonrpc.Invoke(ctx, conn, protocol.WaitProgress, protocol.WaitProgressParams{Work: tt.work, Progress: "mine now"})
			wantCode(t, err, tt.code)
		})
	}
	if w, _ := h.Wait("w_2"); w.Progress != "" {
		t.Fatalf("another package's Wait got progress %q", w.Progress)
	}
}
