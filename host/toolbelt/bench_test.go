package toolbelt

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// BenchmarkToolbeltHandlerCall is one handler call through the toolbelt
// with a fresh request ID: the client over the Unix socket, the token and
// grant checks, the package call (in process here) and the synced commit
// of its replay record. p50-µs is the median call.
func BenchmarkToolbeltHandlerCall(b *testing.B) {
	r := newRig(b)
	tb := r.client(tokenA)
	ctx := context.Background()
	in := jsontext.Value(`{"text":"hello"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, _, err := tb.Call(ctx, client.ToolbeltRequest{Operation: "notes.add", Input: in, RequestID: fmt.Sprintf("rq-%d", i)}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, lat)
}

// BenchmarkToolbeltReplay is a retry answered from the replay record.
// p50-µs is the median call.
func BenchmarkToolbeltReplay(b *testing.B) {
	r := newRig(b)
	tb := r.client(tokenA)
	ctx := context.Background()
	req := client.ToolbeltRequest{Operation: "notes.add", Input: jsontext.Value(`{"text":"hello"}`), RequestID: "rq-once"}
	if _, _, err := tb.Call(ctx, req); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if ans, _, err := tb.Call(ctx, req); err != nil || !ans.Replayed {
			b.Fatal(ans, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, lat)
}

// BenchmarkToolbeltOperationRoundTrip is operation.call as an executing
// program makes it, every part real: the client over the Unix socket, the
// real engine resolving the token to its running execution in the store,
// the grant, operation.call on an SDK package served over real pipes by
// the SDK's harness, the synced commit of the result under the call's
// request ID, and the answer. "echo" is a package whose handler answers
// its input (the toolbelt's own cost); "hello.greet" is the bundled hello
// package, whose handler calls the host back once (a KV update with an
// Event, answered by the harness's in-memory host). p50-µs is the median
// call.
func BenchmarkToolbeltOperationRoundTrip(b *testing.B) {
	cases := []struct {
		name, operation, input string
		ext                    *sdk.Extension
		// want is the output of call i.
		want func(i int) string
	}{
		{"echo", benchEcho, `{"text":"hello"}`, echoExtension(), func(int) string { return `{"text":"hello"}` }},
		{"hello.greet", "hello.greet", `{"name":"ada"}`, hello.Extension(),
			func(i int) string { return fmt.Sprintf(`{"greeting":"Hello, ada!","count":%d}`, i+1) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			tb := newPipeRig(b, tc.ext, tc.operation)
			ctx := context.Background()
			in := jsontext.Value(tc.input)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				ans, _, err := tb.Call(ctx, client.ToolbeltRequest{Operation: tc.operation, Input: in, RequestID: fmt.Sprintf("rq-%d", i)})
				lat = append(lat, time.Since(t0))
				if err != nil || ans.Replayed || string(ans.Output) != tc.want(i) {
					b.Fatalf("call %d: %s (replayed %v), %v; want %s", i, ans.Output, ans.Replayed, err, tc.want(i))
				}
			}
			b.StopTimer()
			reportP50(b, lat)
		})
	}
}

// benchEcho is the echo package's one operation.
const benchEcho = "echo.say"

// echoText is echo.say's input and output.
type echoText struct {
	Text string `json:"text"`
}

// echoExtension is a package whose one handler answers its input.
func echoExtension() *sdk.Extension {
	return sdk.New("echo", sdk.Version("0.1.0")).
		Operation(benchEcho, sdk.Handler(func(_ context.Context, _ *sdk.Request, in echoText) (echoText, error) { return in, nil }))
}

// pipePackages is the one running package, served over pipes by h, as
// the toolbelt sees it.
type pipePackages struct {
	h *sdktest.Harness
	m *protocol.Manifest
}

func (p pipePackages) OperationOwner(name string) (string, protocol.Operation) {
	i := slices.IndexFunc(p.m.Provides.Operations, func(o protocol.Operation) bool { return o.Name == name })
	if i < 0 {
		return "", protocol.Operation{}
	}
	return p.m.Name, p.m.Provides.Operations[i]
}

func (p pipePackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if pkg != p.m.Name {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	return p.h.Raw(ctx, method, params, result)
}

// newPipeRig serves a toolbelt, over a real Pebble store (every commit
// synced), whose token resolves through the real engine to a running
// execution of Work w_bench in scope s under binding b, which grants
// operation of ext; ext is served over pipes by the SDK's harness. It
// answers the client calling as that execution.
func newPipeRig(b *testing.B, ext *sdk.Extension, operation string) *client.Toolbelt {
	b.Helper()
	h, err := sdktest.Start(ext, sdktest.WithScopes("s"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	dir := shortDir(b)
	db, err := pebblekv.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	token, hash := pebblekv.NewToken()
	now := time.Now().UTC()
	if err := db.Update(func(tx *pebblekv.Tx) error {
		if err := tx.PutWork(pebblekv.Work{ID: "w_bench", Scope: "s", Kind: "manual", State: pebblekv.WorkRunning, Binding: "b", Created: now, Updated: now}); err != nil {
			return err
		}
		return tx.PutExecution(pebblekv.Execution{ID: "x_bench", Work: "w_bench", Scope: "s", Binding: "b", Package: "shell", Executor: "shell",
			Attempt: 1, Epoch: 1, TokenHash: hash, State: pebblekv.ExecRunning, Started: now})
	}); err != nil {
		b.Fatal(err)
	}
	gen := &config.Generation{ID: 1, Config: &config.Config{}}
	eng := engine.New(engine.Deps{DB: db, Generation: func() *config.Generation { return gen }})
	srv := New(Deps{
		Engine:   eng,
		Packages: pipePackages{h: h, m: ext.Manifest},
		Grant: func(scope, binding string) (Grant, bool) {
			return Grant{Operations: []string{operation}, Toolbelt: "cli"}, scope == "s" && binding == "b"
		},
		DB: db,
	})
	socket := filepath.Join(dir, "state", SocketName)
	ln, err := Listen(socket)
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		_ = db.Close()
	})
	return client.NewToolbelt(socket, token)
}

// reportP50 reports the median of lat in µs.
func reportP50(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1000, "p50-µs")
}
