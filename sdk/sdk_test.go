package sdk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type forecastIn struct {
	City   string   `json:"city" doc:"The city to forecast, by name."`
	Days   int      `json:"days,omitzero"`
	Tags   []string `json:"tags,omitempty"`
	Nested *struct {
		Units string `json:"units"`
	} `json:"nested,omitempty"`
}

type forecastOut struct {
	Summary string `json:"summary"`
}

func weather(calls *atomic.Int32) *sdk.Extension {
	return sdk.New("weather", sdk.Version("0.1.0")).
		Operation("weather.forecast", sdk.Handler(func(ctx context.Context, r *sdk.Request, in forecastIn) (forecastOut, error) {
			calls.Add(1)
			if in.City == "atlantis" {
				return forecastOut{}, &protocol.Error{Code: "unknown_city", Message: "no forecast for atlantis"}
			}
			return forecastOut{Summary: fmt.Sprintf("rain in %s for %d days (scope %s)", in.City, in.Days, r.Authority.Scope)}, nil
		}), sdk.Guidance("Call it before planning anything outdoors."))
}

func TestHandlerDecodesTypedInput(t *testing.T) {
	var calls atomic.Int32
	h := sdktest.New(t, weather(&calls), sdktest.WithAuthority(protocol.Authority{Scope: "demo"}))
	out, err := sdktest.Call[forecastOut](context.Background(), h, "weather.forecast", map[string]any{"city": "Leeds", "days": 2})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary != "rain in Leeds for 2 days (scope demo)" {
		t.Fatalf("got %q", out.Summary)
	}
}

func TestHandlerRefusesBadInputNamingTheField(t *testing.T) {
	var calls atomic.Int32
	h := sdktest.New(t, weather(&calls))
	cases := []struct {
		name  string
		input any
		field string
	}{
		{"missing required field", map[string]any{"days": 1}, "/city"},
		{"unknown field", map[string]any{"city": "Leeds", "cty": "x"}, "/cty"},
		{"wrong type", map[string]any{"city": 5}, "/city"},
		{"wrong type of optional field", map[string]any{"city": "Leeds", "days": "two"}, "/days"},
		{"fractional integer", map[string]any{"city": "Leeds", "days": 1.5}, "/days"},
		{"wrong element type", map[string]any{"city": "Leeds", "tags": []any{1}}, "/tags/0"},
		{"nested required field", map[string]any{"city": "Leeds", "nested": map[string]any{}}, "/nested/units"},
		{"not an object", []any{1}, "/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sdktest.Call[forecastOut](context.Background(), h, "weather.forecast", tc.input)
			if !errors.Is(err, protocol.ErrBadRequest) {
				t.Fatalf("got %v, want bad_request", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %s", err, tc.field)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatalf("the handler ran %d times on refused input", calls.Load())
	}
	// Negative control: a good input reaches the handler.
	if _, err := sdktest.Call[forecastOut](context.Background(), h, "weather.forecast", map[string]any{"city": "Leeds"}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("calls %d", calls.Load())
	}
}

func TestAuthoredErrorCrossesWithItsCode(t *testing.T) {
	var calls atomic.Int32
	h := sdktest.New(t, weather(&calls))
	_, err := sdktest.Call[forecastOut](context.Background(), h, "weather.forecast", map[string]any{"city": "atlantis"})
	if protocol.CodeOf(err) != "unknown_city" || err.Error() != "no forecast for atlantis" {
		t.Fatalf("got %v", err)
	}
}

func TestUndeclaredOperationIsRefused(t *testing.T) {
	var calls atomic.Int32
	h := sdktest.New(t, weather(&calls))
	_, err := sdktest.Call[forecastOut](context.Background(), h, "weather.nope", map[string]any{})
	if !errors.Is(err, protocol.ErrUndeclared) {
		t.Fatalf("got %v", err)
	}
}

func TestManifestIsDerivedFromRegistrations(t *testing.T) {
	x := sdk.New("acme", sdk.Version("1.2.3"), sdk.Permissions(protocol.PermissionProbes)).
		Family("acme.seen", sdk.Loss("a missed delivery is not seen again")).
		IngressType("acme-feed", "acme.seen").
		Operation("acme.lookup", sdk.Handler(func(context.Context, *sdk.Request, forecastIn) (forecastOut, error) {
			return forecastOut{}, nil
		}), sdk.Describe("look something up")).
		Task("acme-sync", 30*time.Second, func(context.Context, *sdk.Request) error { return nil }).
		Check("acme-ready", func(context.Context, *sdk.Request, bool) (string, error) { return "", nil }, sdk.Deep())
	m := x.Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Command[0] != "acme-extension" || m.Version != "1.2.3" || !m.HasPermission(protocol.PermissionProbes) {
		t.Fatalf("manifest %+v", m)
	}
	op, ok := m.Operation("acme.lookup")
	if !ok || op.Kind != protocol.OperationHandler || op.Summary != "look something up" {
		t.Fatalf("operation %+v", op)
	}
	var schema map[string]any
	if err := json.Unmarshal(op.Input, &schema); err != nil {
		t.Fatal(err)
	}
	if schema["type"] != "object" || schema["additionalProperties"] != false {
		t.Fatalf("schema %s", op.Input)
	}
	req, _ := schema["required"].([]any)
	if len(req) != 1 || req[0] != "city" {
		t.Fatalf("required %v", schema["required"])
	}
	props := schema["properties"].(map[string]any)
	if props["city"].(map[string]any)["description"] != "The city to forecast, by name." {
		t.Fatalf("doc tag not carried: %v", props["city"])
	}
	if len(m.Provides.Tasks) != 1 || m.Provides.Tasks[0].IntervalSeconds != 30 {
		t.Fatalf("tasks %+v", m.Provides.Tasks)
	}
	if len(m.Provides.Checks) != 1 || !m.Provides.Checks[0].Deep {
		t.Fatalf("checks %+v", m.Provides.Checks)
	}
	for _, method := range []string{"operation.call", "task.run", "check.run", "ingress.deliver", "probe.list"} {
		if !m.Enabled(method) {
			t.Errorf("%s should be enabled", method)
		}
	}
	if m.Enabled("route.match") {
		t.Error("route.match enabled without a route")
	}
}

func TestRegistrationMistakesPanicWithTheName(t *testing.T) {
	cases := map[string]func(){
		"duplicate operation": func() {
			h := sdk.Handler(func(context.Context, *sdk.Request, forecastIn) (forecastOut, error) { return forecastOut{}, nil })
			sdk.New("acme").Operation("acme.x", h).Operation("acme.x", h)
		},
		"non-struct input": func() {
			sdk.Handler(func(context.Context, *sdk.Request, string) (forecastOut, error) { return forecastOut{}, nil })
		},
		"zero handler": func() { sdk.New("acme").Operation("acme.x", sdk.OperationHandler{}) },
		"duplicate task": func() {
			fn := func(context.Context, *sdk.Request) error { return nil }
			sdk.New("acme").Task("acme-t", time.Second, fn).Task("acme-t", time.Second, fn)
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if !strings.Contains(fmt.Sprint(r), "sdk:") {
					t.Fatalf("panic %v does not say where", r)
				}
			}()
			fn()
		})
	}
}

func kvExtension(result chan<- error, body func(ctx context.Context, h *sdk.Host) error) *sdk.Extension {
	return sdk.New("notes").Operation("notes.run", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (struct{}, error) {
		return struct{}{}, body(ctx, r.Host)
	}))
}

func TestHostKVThroughTheWire(t *testing.T) {
	ctx := context.Background()
	var got []protocol.KVItem
	x := kvExtension(nil, func(ctx context.Context, h *sdk.Host) error {
		for i := 0; i < 3; i++ {
			if _, err := h.Update(ctx, "notes.index", fmt.Sprintf("k%d", i), func([]byte, bool, *sdk.Batch) ([]byte, error) {
				return []byte(fmt.Sprint(i)), nil
			}); err != nil {
				return err
			}
		}
		v, err := h.Get(ctx, "notes.index", "k1")
		if err != nil || !v.Found || string(v.Value) != "1" || v.Version != digest.KVVersion([]byte("1")) {
			return fmt.Errorf("get: %+v %v", v, err)
		}
		// A stale precondition applies nothing.
		_, err = h.Commit(ctx, sdk.NewBatch().Check("notes.index", "k1", "stale").Put("notes.index", "k9", []byte("x")))
		if !errors.Is(err, protocol.ErrConflict) {
			return fmt.Errorf("stale check: %v", err)
		}
		// A foreign namespace applies nothing.
		_, err = h.Commit(ctx, sdk.NewBatch().Put("notes", "ok", []byte("x")).Put("other", "k", []byte("x")))
		if !errors.Is(err, protocol.ErrUnauthorized) {
			return fmt.Errorf("foreign namespace: %v", err)
		}
		got, err = h.List(ctx, "notes.index", "k")
		return err
	})
	h := sdktest.New(t, x)
	if _, err := sdktest.Call[struct{}](ctx, h, "notes.run", struct{}{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Key != "k0" || string(got[2].Value) != "2" {
		t.Fatalf("list %+v", got)
	}
	if _, ok := h.Host().KV("notes.index")["k9"]; ok {
		t.Fatal("a batch with a failed check applied a write")
	}
	if _, ok := h.Host().KV("notes")["ok"]; ok {
		t.Fatal("a batch touching a foreign namespace applied a write")
	}
}

func TestListPagesPastOneThousand(t *testing.T) {
	var (
		got     int
		listErr error
	)
	x := kvExtension(nil, func(ctx context.Context, h *sdk.Host) error {
		items, err := h.List(ctx, "notes", "")
		got, listErr = len(items), err
		return err
	})
	var opts []sdktest.Option
	for i := 0; i < 2500; i++ {
		opts = append(opts, sdktest.WithKV("notes", fmt.Sprintf("%05d", i), []byte("v")))
	}
	h := sdktest.New(t, x, opts...)
	if _, err := sdktest.Call[struct{}](context.Background(), h, "notes.run", struct{}{}); err != nil {
		// The handler's error crosses as internal; what List said is here.
		t.Fatalf("%v: %v", err, listErr)
	}
	if got != 2500 {
		t.Fatalf("listed %d of 2500", got)
	}
}

func TestRequestsBeforeInitializeAndAfterShutdownAreRefused(t *testing.T) {
	hostR, extW, _ := os.Pipe()
	extR, hostW, _ := os.Pipe()
	done := make(chan error, 1)
	var calls atomic.Int32
	go func() { done <- sdk.ServeStreams(context.Background(), weather(&calls), extR, extW, nil) }()
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{})
	ctx := context.Background()
	err := conn.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "weather.forecast"}, nil)
	if !errors.Is(err, protocol.ErrNotInitialized) {
		t.Fatalf("before initialize: %v", err)
	}
	var init protocol.InitializeResult
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: []int{1}}, &init); err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != 1 || init.Manifest.Name != "weather" {
		t.Fatalf("initialize %+v", init)
	}
	if err := conn.Call(ctx, protocol.MethodShutdown, protocol.ShutdownParams{}, nil); err != nil {
		t.Fatal(err)
	}
	err = conn.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "weather.forecast"}, nil)
	if !errors.Is(err, protocol.ErrShuttingDown) {
		t.Fatalf("after shutdown: %v", err)
	}
	hostW.Close() // stdin EOF: the extension exits
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the extension did not stop on stdin EOF")
	}
	conn.Close()
}

func TestVersionNegotiationRefusesNoCommonVersion(t *testing.T) {
	hostR, extW, _ := os.Pipe()
	extR, hostW, _ := os.Pipe()
	var calls atomic.Int32
	go sdk.ServeStreams(context.Background(), weather(&calls), extR, extW, nil)
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{})
	defer conn.Close()
	err := conn.Call(context.Background(), protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: []int{7, 9}}, nil)
	if !errors.Is(err, protocol.ErrUnsupportedProtocolVersion) {
		t.Fatalf("got %v", err)
	}
}

// TestArtifactDigestCoversEveryChunkInOrder writes an artifact in pieces
// that make chunks hashed aside (256 KiB, and the 64 KiB tail of a piece)
// and chunks hashed in line (a few bytes, 1 KiB): the host checks the
// digest against the bytes it received, so a chunk hashed twice, skipped or
// out of order fails the commit. Negative control: the same bytes with one
// piece swapped commit to a different digest.
func TestArtifactDigestCoversEveryChunkInOrder(t *testing.T) {
	pieces := [][]byte{
		bytes.Repeat([]byte("a"), 3),
		bytes.Repeat([]byte("b"), 320<<10),
		bytes.Repeat([]byte("c"), 1<<10),
		bytes.Repeat([]byte("d"), 256<<10),
		bytes.Repeat([]byte("e"), 7),
	}
	commit := func(pieces [][]byte) (sdk.ArtifactCommitResult, error) {
		var res sdk.ArtifactCommitResult
		x := kvExtension(nil, func(ctx context.Context, h *sdk.Host) error {
			w, err := h.Artifact(ctx, sdk.ArtifactCreateParams{Name: "out"})
			if err != nil {
				return err
			}
			for _, p := range pieces {
				if _, err := w.Write(p); err != nil {
					return err
				}
			}
			res, err = w.Commit()
			return err
		})
		h := sdktest.New(t, x)
		_, err := sdktest.Call[struct{}](context.Background(), h, "notes.run", struct{}{})
		return res, err
	}
	res, err := commit(pieces)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.Join(pieces, nil))
	if res.Digest != hex.EncodeToString(sum[:]) || res.Size != int64(len(bytes.Join(pieces, nil))) {
		t.Fatalf("committed %d bytes with digest %s, want %x", res.Size, res.Digest, sum)
	}
	swapped := [][]byte{pieces[0], pieces[3], pieces[2], pieces[1], pieces[4]}
	other, err := commit(swapped)
	if err != nil || other.Digest == res.Digest {
		t.Fatalf("the swapped pieces committed %q (%v), the same digest as in order", other.Digest, err)
	}
}
