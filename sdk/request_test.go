package sdk_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// recorder keeps the Request each handler was given, by wire method.
type recorder struct {
	mu  sync.Mutex
	got map[string]sdk.Request
}

func (rec *recorder) keep(r *sdk.Request) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.got == nil {
		rec.got = map[string]sdk.Request{}
	}
	rec.got[r.Method] = *r
}

func (rec *recorder) of(method string) (sdk.Request, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r, ok := rec.got[method]
	return r, ok
}

// recording is an extension with one of each kind of handler, each keeping
// its Request.
func recording(rec *recorder) *sdk.Extension {
	return sdk.New("rec").
		EntryType("rec").
		Operation("rec.op", sdk.Handler(func(_ context.Context, r *sdk.Request, _ struct{}) (struct{}, error) {
			rec.keep(r)
			return struct{}{}, nil
		})).
		Task("rec-task", time.Minute, func(_ context.Context, r *sdk.Request) error { rec.keep(r); return nil }).
		Check("rec-check", func(_ context.Context, r *sdk.Request, _ bool) (string, error) { rec.keep(r); return "", nil }).
		Configure(func(_ context.Context, r *sdk.Request, _ sdk.ConfigureParams) (sdk.ConfigureResult, error) {
			rec.keep(r)
			return sdk.ConfigureResult{}, nil
		}).
		Validate(func(_ context.Context, r *sdk.Request, _ sdk.ValidateParams) (sdk.ValidateResult, error) {
			rec.keep(r)
			return sdk.ValidateResult{}, nil
		}).
		Method("rec.custom", func(_ context.Context, r *sdk.Request, _ []byte) (any, error) { rec.keep(r); return struct{}{}, nil })
}

// TestRequestCarriesWhatEachMethodKnows: an operation call's Request
// carries the call's authority, request ID and operation name; every
// handler's carries the Host, its wire method and, for a task or a check,
// its name; nothing leaks from one call into another's Request.
func TestRequestCarriesWhatEachMethodKnows(t *testing.T) {
	var rec recorder
	auth := protocol.Authority{Scope: "s1", Work: "w1", Caller: "agent"}
	h := sdktest.New(t, recording(&rec))
	ctx := context.Background()
	calls := []struct {
		method string
		params any
	}{
		{protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "rec.op", Authority: auth, RequestID: "req-7"}},
		{protocol.MethodTaskRun, protocol.TaskRunParams{Task: "rec-task"}},
		{protocol.MethodCheckRun, protocol.CheckRunParams{Check: "rec-check"}},
		{protocol.MethodValidate, protocol.ValidateParams{Kind: protocol.ValidateExtension, Type: "rec", Name: "e1"}},
		{"rec.custom", map[string]any{}},
	}
	for _, c := range calls {
		if err := h.Raw(ctx, c.method, c.params, nil); err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
	}
	cases := []struct {
		method string
		want   sdk.Request
	}{
		{protocol.MethodOperationCall, sdk.Request{Authority: auth, RequestID: "req-7", Method: protocol.MethodOperationCall, Name: "rec.op"}},
		{protocol.MethodTaskRun, sdk.Request{Method: protocol.MethodTaskRun, Name: "rec-task"}},
		{protocol.MethodCheckRun, sdk.Request{Method: protocol.MethodCheckRun, Name: "rec-check"}},
		{protocol.MethodConfigure, sdk.Request{Method: protocol.MethodConfigure}},
		{protocol.MethodValidate, sdk.Request{Method: protocol.MethodValidate}},
		{"rec.custom", sdk.Request{Method: "rec.custom"}},
	}
	for _, tc := range cases {
		got, ok := rec.of(tc.method)
		if !ok {
			t.Errorf("%s: the handler never ran", tc.method)
			continue
		}
		if got.Host == nil || got.Host.Name() != "rec" {
			t.Errorf("%s: Request.Host is %v, want the extension's Host", tc.method, got.Host)
		}
		got.Host = nil
		if got != tc.want {
			t.Errorf("%s: Request %+v, want %+v", tc.method, got, tc.want)
		}
	}
}

// TestMigrateRunsBeforeConfigureWithARequest: a stored KV layout older than
// the declared one runs Migrate, with the Host, before Configure; an equal
// one does not.
func TestMigrateRunsBeforeConfigureWithARequest(t *testing.T) {
	cases := []struct {
		name           string
		stored         int
		wantMigrations int
	}{
		{"older layout migrates", 1, 1},
		{"current layout does not", 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var order []string
			x := sdk.New("mig", sdk.KVVersion(2)).
				Migrate(func(ctx context.Context, r *sdk.Request, from, to int) error {
					order = append(order, "migrate")
					_, err := r.Host.Commit(ctx, sdk.NewBatch().Put("mig", "layout", []byte{byte('0' + to)}))
					return err
				}).
				Configure(func(context.Context, *sdk.Request, sdk.ConfigureParams) (sdk.ConfigureResult, error) {
					order = append(order, "configure")
					return sdk.ConfigureResult{}, nil
				})
			h := sdktest.New(t, x)
			order = nil
			err := h.Raw(context.Background(), protocol.MethodConfigure,
				protocol.ConfigureParams{KV: protocol.KVLayout{Stored: tc.stored, Declared: 2}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			migrations := 0
			for _, o := range order {
				if o == "migrate" {
					migrations++
				}
			}
			if migrations != tc.wantMigrations || order[len(order)-1] != "configure" {
				t.Fatalf("ran %v", order)
			}
			if tc.wantMigrations > 0 && string(h.Host().KV("mig")["layout"]) != "2" {
				t.Fatal("Migrate's batch did not reach the host")
			}
		})
	}
}

// TestSingleRegistrationsRefuseASecond: Configure, Validate and Migrate
// each take one function; a second or a nil one panics naming it.
func TestSingleRegistrationsRefuseASecond(t *testing.T) {
	cfg := func(context.Context, *sdk.Request, sdk.ConfigureParams) (sdk.ConfigureResult, error) {
		return sdk.ConfigureResult{}, nil
	}
	val := func(context.Context, *sdk.Request, sdk.ValidateParams) (sdk.ValidateResult, error) {
		return sdk.ValidateResult{}, nil
	}
	mig := func(context.Context, *sdk.Request, int, int) error { return nil }
	cases := []struct {
		name string
		fn   func()
	}{
		{"Configure", func() { sdk.New("a").Configure(cfg).Configure(cfg) }},
		{"Validate", func() { sdk.New("a").Validate(val).Validate(val) }},
		{"Migrate", func() { sdk.New("a").Migrate(mig).Migrate(mig) }},
		{"Configure", func() { sdk.New("a").Configure(nil) }},
		{"EntryType", func() { sdk.New("a").EntryType("a").EntryType("a") }},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				if r := recover(); r == nil || !contains(r, "sdk: "+tc.name) {
					t.Errorf("%s: panic %v, want one naming sdk: %s", tc.name, r, tc.name)
				}
			}()
			tc.fn()
		}()
	}
	// Negative control: one of each is fine.
	sdk.New("a").Configure(cfg).Validate(val).Migrate(mig)
}
