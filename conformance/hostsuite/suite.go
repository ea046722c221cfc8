// Package hostsuite is one table of host-side conformance checks, run
// against every host implementation so they give an extension the same
// answers: kv.get, kv.list and kv.commit (versions, preconditions and
// conflicts, foreign namespaces, all or nothing), kv.commit emissions
// (accepted and new, repeats, foreign sources, undeclared families, wrong
// schemas, unconfigured scopes), the size bounds (kv.list paged by bytes, a
// value, key or payload over its bound refused too_large), the state reads
// (only the extension's scopes, paged), event.accept (derives only, records
// with a new Event only), secret.resolve (only what its entries select),
// timer.arm and timer.cancel (its own families, recurrence kinds and
// scopes only; kept until cancelled), work.cancel (open Work of its own
// kinds only, wherever it is), and the answer to every catalogued extension-to-host method: what the
// catalogue marks served reaches its handler, every other method enabled
// answers unsupported, and one the manifest does not enable undeclared.
//
// Every check starts a fresh host through the Host interface and talks to it
// as the extension would: over a real JSON-RPC connection on OS pipes,
// through the method descriptors. The tests beside each host (sdk/memhost,
// host/service) run the suite; its own tests prove that a weakened host
// fails it.
package hostsuite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// Served is a host serving one extension: the handlers of the methods it
// answers, and the gate every request passes before them.
type Served struct {
	// Table holds the host's E→H handlers.
	Table *jsonrpc.Table
	// Gate is what the host answers before any handler runs (nil: nothing).
	Gate func(ctx context.Context, method string) error
}

// Host is a host implementation under test.
type Host interface {
	// Serve starts a fresh host as s describes: empty KV, s's Events in
	// its log and a configuration in which s's entries are the extension's.
	// What it needs (a store in tb.TempDir()) is released by tb's cleanups.
	Serve(tb testing.TB, s Setup) Served
}

// HostFunc adapts a function to Host.
type HostFunc func(tb testing.TB, s Setup) Served

// Serve calls f.
func (f HostFunc) Serve(tb testing.TB, s Setup) Served { return f(tb, s) }

// Setup is what a host holds before the extension connects.
type Setup struct {
	// Manifest is the extension's.
	Manifest *protocol.Manifest
	// Entries are the extension's entries, each in its scope: those
	// scopes, and no others, use it.
	Entries []protocol.Entry
	// Secrets are, by scope, the secrets the extension's entries there
	// select, by name, with their values.
	Secrets map[string]map[string]string
	// Events are accepted, in order, before the extension connects, in
	// any scope and from any source, as ingress or another extension would.
	Events []protocol.Emission
	// Works are held before the extension connects, in any scope and of
	// any kind, as the router would have created them.
	Works []protocol.WorkView
}

// The extension every check runs as, and its scopes.
const (
	// Extension is the extension's name.
	Extension = "acme"
	// EntryType is its one (ingress) entry type: a scope with an entry of it
	// uses the extension.
	EntryType = "acme-feed"
	// Family is its one family.
	Family = "acme.seen"
	// Schema is its payload schema's current version; SchemaOld an older one
	// it only reads.
	Schema    = "acme.seen.v2"
	SchemaOld = "acme.seen.v1"
	// Scope and OtherScope use the extension; Unconfigured does not.
	Scope        = "s1"
	OtherScope   = "s2"
	Unconfigured = "s9"
)

// Manifest is the manifest every check's extension has: one ingress entry
// type, one family, one schema, no permissions.
func Manifest() *protocol.Manifest {
	return &protocol.Manifest{
		Name:     Extension,
		Protocol: append([]int(nil), protocol.Versions...),
		Command:  []string{Extension + "-extension"},
		Provides: protocol.Provides{
			Extensions: []protocol.ExtensionType{{Type: EntryType, Ingress: true, Families: []string{Family}}},
			Families:   []protocol.Family{{Name: Family, Rederivable: true}},
			Schemas:    []protocol.Schema{{Base: Family, Versions: []int{1, 2}}},
		},
	}
}

// Scopes are the scopes that use the extension in every check's Setup.
func Scopes() []string { return []string{Scope, OtherScope} }

// The seeds of every check's Setup.
const (
	// Token is the value of the secret TokenName, which the extension's
	// entry in Scope selects.
	Token     = "t0k3n"
	TokenName = "token"
	// Foreign is a root Event of another extension in Unconfigured, and
	// Seen one in Scope: both accepted before the extension connects.
	Foreign = "other/feed"
)

// ForeignID and SeenID are the IDs of the seeded Events.
var (
	ForeignID = digest.EmittedEventID(Foreign, "f1")
	SeenID    = digest.EmittedEventID(Foreign, "s1")
)

// DefaultSetup is every check's Setup unless it names its own: Manifest,
// one entry in each of Scopes, the secret TokenName selected in Scope, and
// the two seeded Events.
func DefaultSetup() Setup {
	return Setup{
		Manifest: Manifest(),
		Entries: []protocol.Entry{
			{Scope: Scope, Type: EntryType, Name: "feed", Config: []byte(`{"url":"https://example.test/feed"}`)},
			{Scope: OtherScope, Type: EntryType, Name: "feed2"},
		},
		Secrets: map[string]map[string]string{Scope: {TokenName: Token}},
		Events: []protocol.Emission{
			{Scope: Unconfigured, Source: Foreign, DeliveryID: "f1", Type: "other.seen", Payload: protocol.Payload{Schema: "other.seen.v1", Data: []byte(`{"n":0}`)}},
			{Scope: Scope, Source: Foreign, DeliveryID: "s1", Type: "other.seen", Payload: protocol.Payload{Schema: "other.seen.v1", Data: []byte(`{"n":0}`)}},
		},
	}
}

// check is one row of the suite.
type check struct {
	name string
	run  func(x *ext)
	// setup is the check's own Setup (nil: DefaultSetup).
	setup func() Setup
}

// checks is the suite, in the order it runs.
var checks = slices.Concat(kvChecks, emissionChecks, boundsChecks, callbackChecks, stateChecks, timerChecks, workChecks, methodChecks)

// Run runs every check against h, each as a subtest on a fresh host.
func Run(t *testing.T, h Host) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			c.run(connect(t, t, h, c.setupOf()))
		})
	}
}

// Failures runs every check against h, reporting to no test, and returns
// what each failing check reported, by check name; a host that passes
// returns none. tb provides the hosts' temporary directories and cleanups.
// Negative controls use it to prove a weakened host fails the suite.
func Failures(tb testing.TB, h Host) map[string][]string {
	out := map[string][]string{}
	for _, c := range checks {
		rec := &recorder{}
		rec.run(func() { c.run(connect(tb, rec, h, c.setupOf())) })
		if len(rec.failures) > 0 {
			out[c.name] = rec.failures
		}
	}
	return out
}

func (c check) setupOf() Setup {
	if c.setup == nil {
		return DefaultSetup()
	}
	return c.setup()
}

// reporter is what a check reports through: a *testing.T, or a recorder.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// recorder collects a check's failures instead of failing a test.
type recorder struct {
	failures []string
}

// stop is how Fatalf ends a recorded check.
type stop struct{}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(stop{})
}

// run runs fn, ending it quietly at a Fatalf.
func (r *recorder) run(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
	}()
	fn()
}

// ext is the extension's side of one check: a connection to a fresh host.
type ext struct {
	reporter
	ctx   context.Context
	conn  *jsonrpc.Conn
	setup Setup
}

// connect starts a fresh host and connects an extension to it over two OS
// pipes.
func connect(tb testing.TB, r reporter, h Host, s Setup) *ext {
	tb.Helper()
	served := h.Serve(tb, s)
	hostR, extW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	host := jsonrpc.New(hostR, hostW, jsonrpc.Options{Peer: "extension " + Extension, Handlers: served.Table, Gate: served.Gate})
	conn := jsonrpc.New(extR, extW, jsonrpc.Options{Peer: "host"})
	tb.Cleanup(func() {
		_ = conn.Close()
		_ = host.Close()
	})
	return &ext{reporter: r, ctx: context.Background(), conn: conn, setup: s}
}

// commit sends one kv.commit batch.
func (x *ext) commit(p protocol.KVCommitParams) (protocol.KVCommitResult, error) {
	return jsonrpc.Invoke(x.ctx, x.conn, protocol.KVCommit, p)
}

// mustCommit sends a batch that must apply.
func (x *ext) mustCommit(what string, p protocol.KVCommitParams) protocol.KVCommitResult {
	x.Helper()
	res, err := x.commit(p)
	if err != nil {
		x.Fatalf("%s: kv.commit refused: %v", what, err)
	}
	return res
}

// get reads one key, which must be readable.
func (x *ext) get(ns, key string) protocol.KVGetResult {
	x.Helper()
	res, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.KVGet, protocol.KVGetParams{Namespace: ns, Key: key})
	if err != nil {
		x.Fatalf("kv.get %s/%q: %v", ns, key, err)
	}
	return res
}

// wantCode requires err to carry sentinel's code.
func (x *ext) wantCode(what string, err error, sentinel *protocol.Error) {
	x.Helper()
	if got := protocol.CodeOf(err); got != sentinel.Code {
		x.Errorf("%s: answered %q (%v), want %q", what, got, err, sentinel.Code)
	}
}

// wantAbsent requires a key to be absent: what a batch that applied nothing
// leaves.
func (x *ext) wantAbsent(what, ns, key string) {
	x.Helper()
	if got := x.get(ns, key); got.Found {
		x.Errorf("%s: %s/%q holds %q; the refused batch must apply nothing", what, ns, key, got.Value)
	}
}
