package sdktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Call calls a declared handler operation with in encoded as its input and
// decodes the output's data into Out. The call carries the harness's
// authority (WithAuthority) and a request ID of its own, as the daemon's
// calls do. A refusal the handler authored (sdk.Errorf) comes back with its
// code, for errors.Is; an unauthored one (a plain error, a panic) comes
// back as internal, with what the extension logged about it in its message.
func Call[Out any](ctx context.Context, h *Harness, operation string, in any) (Out, error) {
	var out Out
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	res, err := invoke(h, ctx, protocol.OperationCall, operation, protocol.OperationCallParams{
		Operation: operation,
		Input:     protocol.Payload{Data: jsontext.Value(data)},
		Authority: h.auth,
		RequestID: "sdktest-" + strconv.FormatUint(h.calls.Add(1), 10),
	})
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(res.Output.Data, &out)
	return out, err
}

// RunTask runs one pass of a declared task, as the daemon's scheduler
// would at its interval.
func (h *Harness) RunTask(ctx context.Context, task string) error {
	_, err := invoke(h, ctx, protocol.TaskRun, task, protocol.TaskRunParams{Task: task})
	return err
}

// Check runs a declared doctor check, with the configuration view the
// daemon would hand it (Request.Config): each scope of the harness's
// enabled entries (WithEntries, WithConfigure) and its WithScopes, with
// those entries, and the connections of the first configure without
// their secrets. A check that fails answers a result with its status and
// detail, not an error.
func (h *Harness) Check(ctx context.Context, check string) (protocol.CheckRunResult, error) {
	return invoke(h, ctx, protocol.CheckRun, check, protocol.CheckRunParams{Check: check, Config: h.checkView})
}

// checkView is the configuration view cfg describes, as the daemon builds
// it from a configuration.
func checkView(cfg *config) *protocol.CheckConfig {
	v := &protocol.CheckConfig{}
	index := map[string]int{}
	scope := func(id string) *protocol.ScopeView {
		i, ok := index[id]
		if !ok {
			i = len(v.Scopes)
			index[id] = i
			v.Scopes = append(v.Scopes, protocol.ScopeView{ID: id})
		}
		return &v.Scopes[i]
	}
	for _, e := range cfg.configure.Entries {
		sv := scope(e.Scope)
		sv.Entries = append(sv.Entries, protocol.Entry{Scope: e.Scope, Type: e.Type, Name: e.Name, Config: e.Config, Connection: e.Connection})
	}
	for _, id := range cfg.scopes {
		scope(id)
	}
	for _, c := range cfg.configure.Connections {
		v.Connections = append(v.Connections, protocol.Connection{Name: c.Name, Type: c.Type, Config: c.Config})
	}
	return v
}

// Validate asks the extension to check one config object, as the daemon's
// config check does.
func (h *Harness) Validate(ctx context.Context, p sdk.ValidateParams) (sdk.ValidateResult, error) {
	return invoke(h, ctx, protocol.Validate, "validate", p)
}

// Configure sends a new configuration generation, as the daemon's config
// apply does: each entry (enabled and disabled) is validated first, and a
// refusal sends nothing and keeps the host's configuration; then the host
// takes p's entries as its configuration (the scopes that use the
// extension, state.scopes, where secrets resolve) and configure carries p,
// numbered as the next generation when p names none, with the KV layout
// the extension declares.
func (h *Harness) Configure(ctx context.Context, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
	return h.configure(ctx, p, h.ext.Manifest.KVVersion)
}

// configure validates p's entries, makes them the host's configuration and
// sends configure with the layout the store holds.
func (h *Harness) configure(ctx context.Context, p protocol.ConfigureParams, stored int) (protocol.ConfigureResult, error) {
	for _, e := range slices.Concat(p.Entries, p.Disabled) {
		res, err := h.Validate(ctx, protocol.ValidateParams{Kind: protocol.ValidateExtension, Type: e.Type, Config: e.Config, Scope: e.Scope, Name: e.Name})
		switch {
		case errors.Is(err, protocol.ErrMethodNotFound):
			// The extension checks no config: the daemon's check skips it.
		case err != nil:
			return protocol.ConfigureResult{}, fmt.Errorf("entry %q in scope %q: %s refuses its config: %w", e.Name, e.Scope, h.ext.Manifest.Name, err)
		}
		for _, w := range res.Warnings {
			h.book.add(logLine{text: fmt.Sprintf("validate warning for entry %q in scope %q: %s", e.Name, e.Scope, w)})
		}
	}
	if err := h.host.Configure(p); err != nil {
		return protocol.ConfigureResult{}, err
	}
	if p.Generation.ID == 0 {
		p.Generation.ID = h.gen.Add(1)
	}
	p.KV = protocol.KVLayout{Stored: stored, Declared: h.ext.Manifest.KVVersion}
	return invoke(h, ctx, protocol.Configure, "configure", p)
}

// Raw calls any method of the extension with raw params, decoding its
// result into result.
func (h *Harness) Raw(ctx context.Context, method string, params, result any) error {
	mark := h.book.mark()
	return h.explain(h.conn.Call(ctx, method, params, result), mark, method, method)
}

// Emit calls a declared emit operation's operation.emit with in encoded as
// its input, as Call does, and returns the Event it plans. Nothing is
// accepted: the harness's host is no scheduler, so a test checks the draft
// (and, with EmitCommit, the records that would commit with it).
func Emit(ctx context.Context, h *Harness, operation string, in any) (sdk.EmitDraft, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return sdk.EmitDraft{}, err
	}
	res, err := invoke(h, ctx, protocol.OperationEmitPlan, operation, protocol.OperationEmitParams{
		Operation: operation,
		Input:     protocol.Payload{Data: jsontext.Value(data)},
		Authority: h.auth,
		RequestID: "sdktest-" + strconv.FormatUint(h.calls.Add(1), 10),
	})
	return res.Event, err
}

// EmitCommit calls a committing emit operation's emit.commit for ev, the
// Event as the host accepted it, and returns the records it answers (nil
// for none). The harness does not bound it to 250 ms or refuse the
// operation's calls to the host meanwhile, as the daemon does: keep it pure.
func (h *Harness) EmitCommit(ctx context.Context, operation string, ev sdk.Event) (*protocol.KVCommitParams, error) {
	res, err := invoke(h, ctx, protocol.EmitCommit, operation, protocol.EmitCommitParams{
		Operation: operation, Authority: h.auth, Event: ev,
	})
	return res.Records, err
}
