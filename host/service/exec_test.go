package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/artifacts"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// execHarness is two packages, each with an executor and a wait
// operation, served over pipes by services wired as the daemon wires
// them: a real store, a real artifact store, the engine's
// PersistRecovery and WaitProgress. The runner has an execution of Work
// w_1 and the active Wait of w_1; the builtin wait holds w_3's.
type execHarness struct {
	db             *pebblekv.DB
	store          *artifacts.Store
	runner, other  *jsonrpc.Conn
	runnerSvc      *service.Service
	execution      string
	otherExecution string
}

func execManifest(name string) *protocol.Manifest {
	return &protocol.Manifest{Name: name, Protocol: []int{protocol.Version}, Command: []string{name}, Provides: protocol.Provides{
		Executors:  []protocol.Executor{{Name: "shell"}},
		Operations: []protocol.Operation{{Name: "await", Kind: protocol.OperationWait}},
	}}
}

func newExecHarness(t *testing.T) *execHarness {
	t.Helper()
	dir := t.TempDir()
	db := openDB(t, filepath.Join(dir, "store"), true)
	t.Cleanup(func() { db.Close() })
	store, err := artifacts.Open(db, filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h := &execHarness{db: db, store: store}
	now := time.Now()
	err = db.Update(func(tx *pebblekv.Tx) error {
		for i, pkg := range []string{"runner", "other"} {
			_, hash := pebblekv.NewToken()
			x := pebblekv.Execution{ID: pebblekv.NewExecutionID(), Work: []string{"w_1", "w_2"}[i], Scope: "sc", Attempt: 1,
				Package: pkg, Executor: "shell", Epoch: 1, TokenHash: hash, State: pebblekv.ExecRunning, Started: now}
			if err := tx.PutExecution(x); err != nil {
				return err
			}
			if i == 0 {
				h.execution = x.ID
			} else {
				h.otherExecution = x.ID
			}
		}
		for _, w := range []pebblekv.Wait{
			{ID: pebblekv.NewWaitID(), Work: "w_1", Scope: "sc", Execution: h.execution, Owner: "runner", State: pebblekv.WaitActive, Created: now, Updated: now},
			{ID: pebblekv.NewWaitID(), Work: "w_3", Scope: "sc", State: pebblekv.WaitActive, Created: now, Updated: now},
		} {
			if err := tx.PutWait(w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Deps{DB: db})
	gen := &config.Generation{ID: 1, Config: &config.Config{}}
	deps := service.Deps{DB: db, Generation: func() *config.Generation { return gen }, Artifacts: store,
		PersistRecovery: e.PersistRecovery, WaitProgress: e.WaitProgress}
	rm, om := execManifest("runner"), execManifest("other")
	h.runnerSvc = service.New(rm, deps)
	h.runner = connectService(t, rm, h.runnerSvc)
	h.other = connectService(t, om, service.New(om, deps))
	return h
}

// TestArtifactsThroughTheServiceAreTheCallersOwn: the runner writes and
// commits an artifact of its execution, listed under its Work; the other
// package can neither write nor commit it, nor create one naming the
// runner's execution.
func TestArtifactsThroughTheServiceAreTheCallersOwn(t *testing.T) {
	h := newExecHarness(t)
	ctx := context.Background()
	c, err := jsonrpc.Invoke(ctx, h.runner, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Execution: h.execution, Name: "transcript.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsonrpc.Invoke(ctx, h.runner, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name string
		call func() error
	}{
		{"another package writes it", func() error {
			_, err := jsonrpc.Invoke(ctx, h.other, protocol.ArtifactWrite, protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 5, Data: []byte("!")})
			return err
		}},
		{"another package commits it", func() error {
			_, err := jsonrpc.Invoke(ctx, h.other, protocol.ArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact})
			return err
		}},
		{"another package names the runner's execution", func() error {
			_, err := jsonrpc.Invoke(ctx, h.other, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Execution: h.execution, Name: "x"})
			return err
		}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			if err := r.call(); protocol.CodeOf(err) != protocol.CodeNotFound {
				t.Fatalf("%v, want not_found", err)
			}
		})
	}
	sum := sha256.Sum256([]byte("hello"))
	res, err := jsonrpc.Invoke(ctx, h.runner, protocol.ArtifactCommit, protocol.ArtifactCommitParams{Artifact: c.Artifact, Digest: hex.EncodeToString(sum[:])})
	if err != nil || res.Size != 5 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	var listed []pebblekv.Artifact
	_ = h.db.View(func(r *pebblekv.Reader) (err error) {
		listed, err = r.ArtifactsOfWork("w_1")
		return err
	})
	if len(listed) != 1 || listed[0].ID != c.Artifact || listed[0].Package != "runner" {
		t.Fatalf("w_1's artifacts: %+v", listed)
	}
}

// TestArtifactMethodsWithoutAStoreAreUnsupported: a service given no
// artifact store says so.
func TestArtifactMethodsWithoutAStoreAreUnsupported(t *testing.T) {
	m := execManifest("runner")
	conn := connectService(t, m, service.New(m, service.Deps{}))
	_, err := jsonrpc.Invoke(context.Background(), conn, protocol.ArtifactCreate, protocol.ArtifactCreateParams{Name: "x"})
	if protocol.CodeOf(err) != protocol.CodeUnsupported {
		t.Fatalf("%v, want unsupported", err)
	}
}

// TestPersistRecoveryIsJudgedByCallerBeforeTheEngine: only the package
// whose executor runs the execution reaches the engine, which stores the
// metadata under the lease; another
// package's execution or an unknown one is not_found, and metadata over
// the bound is too_large, each counted as a refusal.
func TestPersistRecoveryIsJudgedByCallerBeforeTheEngine(t *testing.T) {
	h := newExecHarness(t)
	ctx := context.Background()
	small := jsontext.Value(`{"pid":42}`)
	big := jsontext.Value(`"` + strings.Repeat("x", protocol.MaxRecoveryBytes) + `"`)
	tests := []struct {
		name      string
		execution string
		recovery  jsontext.Value
		code      string
		message   string
	}{
		{"its own execution reaches the engine", h.execution, small, "", ""},
		{"another package's execution", h.otherExecution, small, protocol.CodeNotFound, "no execution"},
		{"an unknown execution", "x_nope", small, protocol.CodeNotFound, "no execution"},
		{"no execution", "", small, protocol.CodeNotFound, "no execution"},
		{"metadata over the bound", h.execution, big, protocol.CodeTooLarge, "bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.runnerSvc.Refused()
			p := protocol.ExecutionPersistRecoveryParams{ExecutionRef: protocol.ExecutionRef{Execution: tt.execution, Epoch: 1}, Recovery: tt.recovery}
			_, err := jsonrpc.Invoke(ctx, h.runner, protocol.ExecutionPersistRecovery, p)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if x := h.execRecord(t, tt.execution); string(x.Recovery) != string(tt.recovery) {
					t.Fatalf("the engine kept %s, want %s", x.Recovery, tt.recovery)
				}
				return
			}
			if protocol.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("%v, want %s saying %q", err, tt.code, tt.message)
			}
			if h.runnerSvc.Refused() != before+1 {
				t.Fatalf("refusals went %d → %d, want one more", before, h.runnerSvc.Refused())
			}
		})
	}
}

// TestWaitProgressOnlyFromTheWaitsOwner: the package whose wait operation
// declared a Work's active Wait reaches the engine, which sets its progress
// line; another package, or anyone for the builtin wait's Wait, is
// unauthorized; a Work with no active Wait is not_found.
func TestWaitProgressOnlyFromTheWaitsOwner(t *testing.T) {
	h := newExecHarness(t)
	ctx := context.Background()
	tests := []struct {
		name string
		conn *jsonrpc.Conn
		work string
		code string
	}{
		{"the owner reaches the engine", h.runner, "w_1", ""},
		{"another package", h.other, "w_1", protocol.CodeUnauthorized},
		{"the builtin wait's Wait", h.runner, "w_3", protocol.CodeUnauthorized},
		{"a Work with no active Wait", h.runner, "w_2", protocol.CodeNotFound},
		{"no Work", h.runner, "", protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonrpc.Invoke(ctx, tt.conn, protocol.WaitProgress, protocol.WaitProgressParams{Work: tt.work, Progress: "3 of 5 checks"})
			if tt.code == "" && err != nil {
				t.Fatal(err)
			}
			if protocol.CodeOf(err) != tt.code {
				t.Fatalf("%v, want %s", err, tt.code)
			}
			if tt.code == "" {
				var w pebblekv.Wait
				if err := h.db.View(func(rd *pebblekv.Reader) (err error) {
					w, _, err = rd.ActiveWait(tt.work)
					return err
				}); err != nil || w.Progress != "3 of 5 checks" {
					t.Fatalf("the Wait's progress is %q (%v), want the line sent", w.Progress, err)
				}
			}
		})
	}
}

// execRecord reads execution id from the harness's store.
func (h *execHarness) execRecord(t *testing.T, id string) pebblekv.Execution {
	t.Helper()
	var x pebblekv.Execution
	if err := h.db.View(func(rd *pebblekv.Reader) (err error) {
		x, _, err = rd.Execution(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return x
}
