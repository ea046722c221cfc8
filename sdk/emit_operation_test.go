package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type builtIn struct {
	Build string `json:"build"`
}

// builder declares notes.built, an emit operation planning a notes.built
// Event whose records note the accepted Event under its build, and
// notes.plain, one that does not commit.
func builder() *sdk.Extension {
	plan := func(_ context.Context, r *sdk.Request, in builtIn) (sdk.EmitDraft, error) {
		if in.Build == "" {
			return sdk.EmitDraft{}, sdk.Errorf(sdk.ErrBadRequest, "name the build")
		}
		return sdk.EmitDraft{Type: "notes.built", Payload: sdk.Payload{Schema: "notes.built.v1", Data: []byte(`{"build":"` + in.Build + `"}`)}}, nil
	}
	return sdk.New("notes").
		Family("notes.built", sdk.Rederivable()).
		Schema("notes.built", 1).
		Operation("notes.built", sdk.Emit(plan), sdk.Commit(func(_ context.Context, r *sdk.Request, ev sdk.Event) (*sdk.Batch, error) {
			if ev.Depth > 3 {
				return nil, sdk.Errorf(sdk.ErrConflict, "too deep")
			}
			return sdk.NewBatch().CheckAbsent("notes", "built/"+ev.ID).Put("notes", "built/"+ev.ID, []byte(ev.Root)), nil
		})).
		Operation("notes.plain", sdk.Emit(plan))
}

// TestEmitOperationIsDeclaredAndServedFromTheSDKAlone: sdk.Emit declares
// an emit operation (commit with sdk.Commit), operation.emit decodes the
// input strictly and answers the draft, emit.commit answers the records
// for the accepted Event, and the surfaces are the manifest's.
func TestEmitOperationIsDeclaredAndServedFromTheSDKAlone(t *testing.T) {
	x := builder()
	ops := x.Manifest.Provides.Operations
	if len(ops) != 2 || ops[0].Kind != protocol.OperationEmit || !ops[0].Commit || ops[1].Kind != protocol.OperationEmit || ops[1].Commit {
		t.Fatalf("declared operations %+v; want two emits, the first committing", ops)
	}
	if !x.Manifest.Enabled(protocol.MethodOperationEmit) || !x.Manifest.Enabled(protocol.MethodEmitCommit) || x.Manifest.Enabled(protocol.MethodOperationCall) {
		t.Fatalf("surfaces: emit %v, commit %v, call %v; want emit and commit only",
			x.Manifest.Enabled(protocol.MethodOperationEmit), x.Manifest.Enabled(protocol.MethodEmitCommit), x.Manifest.Enabled(protocol.MethodOperationCall))
	}
	h := sdktest.New(t, x)
	ctx := context.Background()
	d, err := sdktest.Emit(ctx, h, "notes.built", builtIn{Build: "b7"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "notes.built" || d.Payload.Schema != "notes.built.v1" || string(d.Payload.Data) != `{"build":"b7"}` {
		t.Fatalf("draft %+v", d)
	}
	ev := sdk.Event{ID: "ev_1", Sequence: 9, Root: "ev_0", Depth: 1, Type: "notes.built"}
	rec, err := h.EmitCommit(ctx, "notes.built", ev)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || len(rec.Checks) != 1 || !rec.Checks[0].Absent || len(rec.Puts) != 1 || rec.Puts[0].Key != "built/ev_1" || string(rec.Puts[0].Value) != "ev_0" {
		t.Fatalf("records %+v", rec)
	}
	// Refusals: bad input, the operation's own error in emit.commit, a
	// handler call to an emit operation, emit.commit of one that does not
	// commit.
	for _, tc := range []struct {
		name string
		call func() error
		code *sdk.Error
	}{
		{"an unknown input field", func() error {
			_, err := sdktest.Emit(ctx, h, "notes.built", map[string]string{"build": "b", "extra": "x"})
			return err
		}, sdk.ErrBadRequest},
		{"the plan's own refusal", func() error { _, err := sdktest.Emit(ctx, h, "notes.built", builtIn{}); return err }, sdk.ErrBadRequest},
		{"emit.commit's own refusal", func() error {
			_, err := h.EmitCommit(ctx, "notes.built", sdk.Event{ID: "ev_2", Depth: 4})
			return err
		}, sdk.ErrConflict},
		{"emit.commit of an operation that does not commit", func() error {
			_, err := h.EmitCommit(ctx, "notes.plain", ev)
			return err
		}, protocol.ErrUndeclared},
		{"an undeclared emit operation", func() error { _, err := sdktest.Emit(ctx, h, "notes.gone", builtIn{Build: "b"}); return err }, protocol.ErrUndeclared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.code) {
				t.Fatalf("%v, want %s", err, tc.code.Code)
			}
		})
	}
}

// TestCommitOnAHandlerPanics: only an emit operation may commit.
func TestCommitOnAHandlerPanics(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "only an emit operation") {
			t.Fatalf("panic %v; want one saying only an emit operation may commit", p)
		}
	}()
	sdk.New("notes").Operation("notes.add", sdk.Handler(func(context.Context, *sdk.Request, builtIn) (struct{}, error) { return struct{}{}, nil }),
		sdk.Commit(func(context.Context, *sdk.Request, sdk.Event) (*sdk.Batch, error) { return nil, nil }))
}
