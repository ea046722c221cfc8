// Package sdktest tests an extension's handlers against an in-memory host,
// over a real JSON-RPC pipe, so every call crosses the wire as it would in
// the daemon.
package sdktest

import (
	"context"
	"log/slog"
	"os"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// Harness serves one extension in process, over real pipes, against an
// in-memory host (memhost), after the same handshake the daemon runs.
type Harness struct {
	t    testing.TB
	ext  *sdk.Extension
	host *memhost.Host
	conn *jsonrpc.Conn
	done chan error
	auth protocol.Authority
}

// Option configures a Harness.
type Option func(*config)

type config struct {
	kv        []kvSeed
	scopes    []string
	authority protocol.Authority
	configure protocol.ConfigureParams
}

type kvSeed struct {
	ns, key string
	value   []byte
}

// WithKV seeds a KV value before the extension starts.
func WithKV(namespace, key string, value []byte) Option {
	return func(c *config) { c.kv = append(c.kv, kvSeed{namespace, key, value}) }
}

// WithScopes names the scopes whose configuration uses the extension: the
// scopes its kv.commit emissions may name, as in the daemon.
func WithScopes(scopes ...string) Option {
	return func(c *config) { c.scopes = append(c.scopes, scopes...) }
}

// WithAuthority sets the authority operation calls carry.
func WithAuthority(a protocol.Authority) Option { return func(c *config) { c.authority = a } }

// WithConfigure sets the first configure's params.
func WithConfigure(p protocol.ConfigureParams) Option { return func(c *config) { c.configure = p } }

// New serves ext and runs initialize and configure; the test fails if the
// handshake does. The extension is stopped in the test's cleanup.
func New(t testing.TB, ext *sdk.Extension, opts ...Option) *Harness {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := ext.Manifest.Validate(); err != nil {
		t.Fatalf("sdktest: the extension's manifest is invalid:\n%v", err)
	}
	host := memhost.New(ext.Manifest.Name, memhost.WithManifest(ext.Manifest), memhost.WithScopes(cfg.scopes...))
	h := &Harness{t: t, ext: ext, host: host, done: make(chan error, 1), auth: cfg.authority}
	for _, s := range cfg.kv {
		h.host.Put(s.ns, s.key, s.value)
	}
	hostR, extW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		h.done <- sdk.ServeStreams(context.Background(), ext, extR, extW, slog.New(slog.DiscardHandler))
	}()
	m := ext.Manifest
	h.conn = jsonrpc.New(hostR, hostW, jsonrpc.Options{
		Peer:     "extension " + m.Name,
		Handlers: host.Table(),
		Gate:     host.Gate,
	})
	t.Cleanup(h.close)
	ctx := context.Background()
	init, err := jsonrpc.Invoke(ctx, h.conn, protocol.Initialize, protocol.InitializeParams{
		ProtocolVersions: protocol.Versions,
		Host:             protocol.HostInfo{Name: "sdktest", Version: "0"},
		StateDir:         t.TempDir(),
	})
	if err != nil {
		t.Fatalf("sdktest: initialize: %v", err)
	}
	if !m.SemanticallyEqual(&init.Manifest) {
		t.Fatalf("sdktest: initialize answered a different manifest (first difference: %s)", m.Diff(&init.Manifest))
	}
	cfg.configure.KV = protocol.KVLayout{Stored: m.KVVersion, Declared: m.KVVersion}
	if _, err := jsonrpc.Invoke(ctx, h.conn, protocol.Configure, cfg.configure); err != nil {
		t.Fatalf("sdktest: configure: %v", err)
	}
	return h
}

func (h *Harness) close() {
	_, _ = jsonrpc.Invoke(context.Background(), h.conn, protocol.Shutdown, protocol.ShutdownParams{})
	_ = h.conn.Close()
	<-h.done
}

// Host is the in-memory host the extension talks to.
func (h *Harness) Host() *memhost.Host { return h.host }

// Raw calls any method of the extension with raw params.
func (h *Harness) Raw(ctx context.Context, method string, params, result any) error {
	return h.conn.Call(ctx, method, params, result)
}

// Call calls a declared handler operation with in encoded as its input and
// decodes the output's data into Out.
func Call[Out any](ctx context.Context, h *Harness, operation string, in any) (Out, error) {
	var out Out
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	res, err := jsonrpc.Invoke(ctx, h.conn, protocol.OperationCall, protocol.OperationCallParams{
		Operation: operation,
		Input:     protocol.Payload{Data: jsontext.Value(data)},
		Authority: h.auth,
	})
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(res.Output.Data, &out)
	return out, err
}

// RunTask runs one pass of a declared task.
func (h *Harness) RunTask(ctx context.Context, task string) error {
	_, err := jsonrpc.Invoke(ctx, h.conn, protocol.TaskRun, protocol.TaskRunParams{Task: task})
	return err
}

// Check runs a declared doctor check.
func (h *Harness) Check(ctx context.Context, check string) (protocol.CheckRunResult, error) {
	return jsonrpc.Invoke(ctx, h.conn, protocol.CheckRun, protocol.CheckRunParams{Check: check})
}
