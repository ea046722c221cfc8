// Package sdktest tests an extension's handlers the way the daemon runs
// them: served in process over real OS pipes, after the daemon's handshake
// (initialize, a validate of each configured entry, configure), against an
// in-memory host (sdk/memhost) that answers every extension-to-host method
// exactly as the daemon does. One conformance suite runs against memhost
// and the daemon's own host service, so what passes here meets the same
// answers in the daemon:
//
//   - served: kv.get, kv.list and kv.commit (with emissions), the state
//     reads (state.sequence, state.event, state.events, state.work_events,
//     state.scopes, state.scope), event.accept, secret.resolve,
//     ingress.deliver, timer.*, work.cancel, artifact.*,
//     execution.persist_recovery and wait.progress, under the daemon's
//     rules (own namespaces, sources and families, current schemas, scopes
//     that use the extension, size bounds, all-or-nothing batches, the
//     executions and Waits seeded with memhost's PutExecution and PutWait);
//   - unsupported: every other catalogued method the manifest enables
//     (state.work, state.timers …), as in the daemon;
//   - undeclared: a method the manifest does not enable.
//
// What it does not do: no causal limits on derived Events, no Work (so
// state.work_events answers empty pages), no connections, no timers (a
// task runs only when the test calls RunTask), no restarts and no other
// extensions.
//
// A handler's unauthored error (a plain error, or a panic) reaches the
// wire as "internal error", with its detail only in the extension's log;
// the harness keeps that log, gives each line to the test's log, and
// attaches what the extension logged about a failed call to the error it
// returns.
package sdktest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// Harness serves one extension in process, over real pipes, against an
// in-memory host (memhost), after the same handshake the daemon runs.
type Harness struct {
	ext      *sdk.Extension
	host     *memhost.Host
	conn     *jsonrpc.Conn
	done     chan error
	auth     protocol.Authority
	book     *logBook
	stateDir string
	gen      atomic.Int64
	calls    atomic.Uint64
	// checkView is what Check hands a check as the configuration.
	checkView *protocol.CheckConfig

	closeOnce sync.Once
	closeErr  error
}

// Option configures a Harness.
type Option func(*config)

type config struct {
	kv        []kvSeed
	kvVersion *int
	events    []protocol.Emission
	scopes    []string
	secrets   map[string]map[string]string
	authority protocol.Authority
	configure protocol.ConfigureParams
	logf      func(string)
}

type kvSeed struct {
	ns, key string
	value   []byte
}

// WithKV seeds a KV value before the extension starts, in the layout the
// store holds (WithKVVersion).
func WithKV(namespace, key string, value []byte) Option {
	return func(c *config) { c.kv = append(c.kv, kvSeed{namespace, key, value}) }
}

// WithKVVersion says the store holds KV layout stored, as the daemon
// records it. The first configure then tells the extension so, and an
// extension that declares a later layout runs its Migrate from stored to
// it before its Configure, as after an upgrade. Without it the store is at
// the declared layout and nothing migrates; WithKVVersion(0) is a store
// with no layout recorded, as at a package's first start.
func WithKVVersion(stored int) Option { return func(c *config) { c.kvVersion = &stored } }

// WithEvents accepts events in scope before the extension starts, in
// order, as ingress or another extension would: from any source, of any
// family, with none of the extension's rules. Each is named by its source
// and delivery ID; a Parent must be one seeded before it in the same
// scope. They are what the state reads answer when scope uses the
// extension (WithEntries, WithScopes).
func WithEvents(scope string, events ...sdk.Emission) Option {
	return func(c *config) {
		for _, e := range events {
			e.Scope = scope
			c.events = append(c.events, e)
		}
	}
}

// WithEntries adds the extension's config entries, each naming its scope
// and one of the extension's entry types, as the daemon projects a
// configuration: the first configure carries them, each is validated first
// (a refusal fails the start, as it fails the daemon's config check),
// their scopes use the extension, and state.scopes shows them with their
// config.
func WithEntries(entries ...sdk.Entry) Option {
	return func(c *config) { c.configure.Entries = append(c.configure.Entries, entries...) }
}

// WithScopes names scopes that use the extension without one of its
// entries: scopes its emissions may name and its state reads see.
func WithScopes(scopes ...string) Option {
	return func(c *config) { c.scopes = append(c.scopes, scopes...) }
}

// WithSecrets sets the secrets the extension's entries select in scope,
// by name: what secret.resolve answers there. The scope needs one of the
// extension's entries (WithEntries): the daemon resolves nothing where it
// has none.
func WithSecrets(scope string, secrets map[string]string) Option {
	return func(c *config) {
		if c.secrets == nil {
			c.secrets = map[string]map[string]string{}
		}
		c.secrets[scope] = secrets
	}
}

// WithAuthority sets the authority operation calls carry.
func WithAuthority(a sdk.Authority) Option { return func(c *config) { c.authority = a } }

// WithConfigure sets the first configure's params whole (WithEntries adds
// to its entries). Its KV layout is the harness's to set (WithKVVersion).
func WithConfigure(p sdk.ConfigureParams) Option {
	return func(c *config) {
		entries := c.configure.Entries
		c.configure = p
		c.configure.Entries = append(slices.Clone(p.Entries), entries...)
	}
}

// New starts ext as Start does and stops it in the test's cleanup; the
// test fails if the start does. Every line the extension logs goes to the
// test's log.
func New(t testing.TB, ext *sdk.Extension, opts ...Option) *Harness {
	t.Helper()
	opts = append(slices.Clone(opts), func(c *config) { c.logf = func(s string) { t.Log(s) } })
	h, err := Start(ext, opts...)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("sdktest: %v", err)
		}
	})
	return h
}

// Start serves ext against a fresh in-memory host set up by opts, and runs
// the daemon's handshake: initialize (the manifest answered must be ext's),
// validate of each entry, then configure. Close stops it. Use New in a
// test; Start is for code with no *testing.T, such as an example.
func Start(ext *sdk.Extension, opts ...Option) (*Harness, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	m := ext.Manifest
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("the extension's manifest is invalid:\n%v", err)
	}
	host, err := newHost(m, &cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sdktest-"+m.Name+"-")
	if err != nil {
		return nil, err
	}
	h := &Harness{ext: ext, host: host, done: make(chan error, 1), auth: cfg.authority, book: &logBook{logf: cfg.logf}, stateDir: dir,
		checkView: checkView(&cfg)}
	if err := h.serve(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := h.handshake(&cfg); err != nil {
		_ = h.Close()
		return nil, err
	}
	return h, nil
}

// newHost is the in-memory host cfg describes, with its KV and Events
// seeded.
func newHost(m *protocol.Manifest, cfg *config) (*memhost.Host, error) {
	opts := []memhost.Option{memhost.WithManifest(m), memhost.WithScopes(cfg.scopes...)}
	for scope, secrets := range cfg.secrets {
		has := func(e protocol.Entry) bool { return e.Scope == scope }
		if !slices.ContainsFunc(cfg.configure.Entries, has) && !slices.ContainsFunc(cfg.configure.Disabled, has) {
			return nil, fmt.Errorf("WithSecrets(%q): the extension has no entry in scope %q, so the daemon would resolve nothing there: add one with WithEntries", scope, scope)
		}
		opts = append(opts, memhost.WithSecrets(scope, secrets))
	}
	host := memhost.New(m.Name, opts...)
	for _, s := range cfg.kv {
		host.Put(s.ns, s.key, s.value)
	}
	for _, e := range cfg.events {
		if _, _, err := host.Accept(e); err != nil {
			return nil, fmt.Errorf("WithEvents(%q): event %s/%s: %w", e.Scope, e.Source, e.DeliveryID, err)
		}
	}
	return host, nil
}

// serve connects the extension to the host over two OS pipes.
func (h *Harness) serve() error {
	hostR, extW, err := os.Pipe()
	if err != nil {
		return err
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		hostR.Close()
		extW.Close()
		return err
	}
	logger := slog.New(&bookHandler{book: h.book})
	go func() {
		h.done <- sdk.ServeStreams(context.Background(), h.ext, extR, extW, logger)
		extR.Close()
		extW.Close()
	}()
	h.conn = jsonrpc.New(hostR, hostW, jsonrpc.Options{
		Peer:     "extension " + h.ext.Manifest.Name,
		Handlers: h.host.Table(),
		Gate:     h.host.Gate,
	})
	return nil
}

// handshake runs initialize, validate and the first configure.
func (h *Harness) handshake(cfg *config) error {
	ctx := context.Background()
	m := h.ext.Manifest
	init, err := invoke(h, ctx, protocol.Initialize, protocol.MethodInitialize, protocol.InitializeParams{
		ProtocolVersions: protocol.Versions,
		Host:             protocol.HostInfo{Name: "sdktest", Version: "0"},
		StateDir:         h.stateDir,
		ArtifactWindow:   protocol.ArtifactWindow,
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if !m.SemanticallyEqual(&init.Manifest) {
		return fmt.Errorf("initialize answered a different manifest (first difference: %s)", m.Diff(&init.Manifest))
	}
	stored := m.KVVersion
	if cfg.kvVersion != nil {
		stored = *cfg.kvVersion
	}
	if _, err := h.configure(ctx, cfg.configure, stored); err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	return nil
}

// Close shuts the extension down as the daemon does (shutdown, then its
// stdin closes), waits for it to stop serving and removes its state
// directory. It reports an error the serving ended with; calling it again
// does nothing more.
func (h *Harness) Close() error {
	h.closeOnce.Do(func() {
		ctx := context.Background()
		_, _ = jsonrpc.Invoke(ctx, h.conn, protocol.Shutdown, protocol.ShutdownParams{})
		_ = h.conn.Close()
		if err := <-h.done; err != nil {
			h.closeErr = fmt.Errorf("the extension stopped serving with an error: %w", err)
		}
		h.book.stop()
		if err := os.RemoveAll(h.stateDir); err != nil && h.closeErr == nil {
			h.closeErr = err
		}
	})
	return h.closeErr
}

// Host is the in-memory host the extension talks to.
func (h *Harness) Host() *memhost.Host { return h.host }

// StateDir is the state directory initialize gave the extension.
func (h *Harness) StateDir() string { return h.stateDir }

// Log returns every line the extension side has logged so far.
func (h *Harness) Log() []string { return h.book.all() }

// KV returns a copy of one of the extension's KV namespaces.
func (h *Harness) KV(namespace string) map[string][]byte { return h.host.KV(namespace) }

// Events returns every accepted Event, seeded ones included, in sequence
// order.
func (h *Harness) Events() []sdk.Event { return h.host.Events() }

// Commits returns every kv.commit batch the host applied, in order.
func (h *Harness) Commits() []protocol.KVCommitParams { return h.host.Commits() }

// invoke calls one method of the extension through its descriptor; an
// unauthored error carries what the extension logged about it, under
// name.
func invoke[P, R any](h *Harness, ctx context.Context, d protocol.Desc[P, R], name string, p P) (R, error) {
	mark := h.book.mark()
	res, err := jsonrpc.Invoke(ctx, h.conn, d, p)
	return res, h.explain(err, mark, d.Name, name)
}

// explain attaches to an internal error what the extension logged about
// method since mark.
func (h *Harness) explain(err error, mark int, method, name string) error {
	if err == nil || !errors.Is(err, protocol.ErrInternal) {
		return err
	}
	lines := h.book.since(mark, method)
	if len(lines) == 0 {
		return err
	}
	return &unauthoredError{name: name, err: err, log: lines}
}
