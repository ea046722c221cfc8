// Package memhost is an in-memory host service for one extension: the host
// side of every extension-to-host method the daemon serves (kv.*, state.*,
// event.accept, secret.resolve, timer.arm, timer.cancel and work.cancel), answering as the daemon does (the same
// protocol rules for kv.commit, emissions and callbacks), with no store.
// sdktest serves extensions against it; so does anything that needs the
// host side of the protocol without a daemon.
//
// A method the daemon does not serve yet answers unsupported here too, as
// one the manifest does not enable answers undeclared: a package tested on
// memhost meets no method the daemon would refuse. The conformance suite
// (conformance/hostsuite) runs the same checks against memhost and the
// daemon's service, so the two cannot drift.
package memhost

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Host is an in-memory host service for one extension: KV with the
// daemon's rules (versions, preconditions, the extension's own namespaces
// only, all-or-nothing batches, the size bounds, kv.list paged by count and
// bytes), kv.commit emissions and event.accept into an event log (its own
// families and sources, current schemas, configured scopes, dedupe by
// source and delivery ID, parents in the same scope), the state reads of
// that log and of the configured scopes, and secret.resolve of the secrets
// its entries select, and work.cancel of the Work a test seeds (PutWork). It
// does not enforce causal limits, routes nothing (so state.work_events
// answers empty pages) and configures no connections. It is safe for
// concurrent use.
type Host struct {
	name    string
	m       *protocol.Manifest
	scopes  []string
	secrets map[string]map[string]string
	rules   protocol.KVRules
	table   *jsonrpc.Table

	// cfg is the configuration the extension sees, swapped whole by
	// Configure, so a call answers from one configuration.
	cfg atomic.Pointer[configView]

	mu         sync.Mutex
	kv         map[string]map[string][]byte
	commits    []protocol.KVCommitParams
	events     []protocol.Event
	eventIndex map[string]int
	artifacts  map[string]*Artifact
	nextID     int
	deliveries []protocol.IngressDeliverParams
	timers     map[string]protocol.TimerArmParams
	works      map[string]Work
	executions map[string]*Execution
	waits      map[string]*Wait
}

// Option configures a Host.
type Option func(*Host)

// WithManifest sets the manifest the host judges the extension by: the
// methods it enables, its families and its schemas. Without it the host
// knows only the extension's name: the methods every extension has, and no
// families, so every emission is refused undeclared.
func WithManifest(m *protocol.Manifest) Option { return func(h *Host) { h.m = m } }

// WithScopes names scopes whose configuration uses the extension beyond
// those its entries are in (Configure): scopes its emissions may name and
// its state reads see, with none of its entries.
func WithScopes(scopes ...string) Option {
	return func(h *Host) { h.scopes = append(h.scopes, scopes...) }
}

// WithSecrets sets the secrets the extension's entries select in scope,
// by name: what secret.resolve answers there. As in the daemon, a scope
// where the extension has no entry resolves nothing.
func WithSecrets(scope string, secrets map[string]string) Option {
	return func(h *Host) {
		if h.secrets == nil {
			h.secrets = map[string]map[string]string{}
		}
		h.secrets[scope] = secrets
	}
}

// New returns an empty host for the extension named name, with no entries.
// A manifest given with WithManifest must carry that name; another panics,
// naming both.
func New(name string, opts ...Option) *Host {
	h := &Host{name: name, kv: map[string]map[string][]byte{}, artifacts: map[string]*Artifact{}, eventIndex: map[string]int{}}
	for _, o := range opts {
		o(h)
	}
	if h.m == nil {
		h.m = &protocol.Manifest{Name: name}
	}
	if h.m.Name != name {
		panic(fmt.Sprintf("memhost: New(%q): WithManifest names another extension, %q", name, h.m.Name))
	}
	h.cfg.Store(newConfigView(h.scopes, nil, nil))
	h.rules = protocol.HostKVRules(h.m, h.inScope)
	h.table = h.newTable()
	return h
}

// inScope reports whether scope uses the extension.
func (h *Host) inScope(scope string) bool { return h.cfg.Load().uses(scope) }

// Table is the host's methods, for a session's or a test connection's
// Handlers. It is built once and only read.
func (h *Host) Table() *jsonrpc.Table { return h.table }

func (h *Host) newTable() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Serve(t, protocol.KVGet, h.get)
	jsonrpc.Serve(t, protocol.KVList, h.list)
	jsonrpc.Serve(t, protocol.KVCommit, h.commit)
	jsonrpc.Serve(t, protocol.StateSequence, h.stateSequence)
	jsonrpc.Serve(t, protocol.StateEvent, h.stateEvent)
	jsonrpc.Serve(t, protocol.StateEvents, h.stateEvents)
	jsonrpc.Serve(t, protocol.StateWorkEvents, h.stateWorkEvents)
	jsonrpc.Serve(t, protocol.StateScopes, h.stateScopes)
	jsonrpc.Serve(t, protocol.StateScope, h.stateScope)
	jsonrpc.Serve(t, protocol.EventAccept, h.eventAccept)
	jsonrpc.Serve(t, protocol.SecretResolve, h.secretResolve)
	h.serveTimers(t)
	jsonrpc.Serve(t, protocol.IngressDeliver, h.deliver)
	jsonrpc.Serve(t, protocol.WorkCancel, h.workCancel)
	jsonrpc.Serve(t, protocol.ArtifactCreate, h.artifactCreate)
	jsonrpc.Serve(t, protocol.ArtifactWrite, h.artifactWrite)
	jsonrpc.Serve(t, protocol.ArtifactCommit, h.artifactCommit)
	jsonrpc.Serve(t, protocol.ArtifactAbort, h.artifactAbort)
	jsonrpc.Serve(t, protocol.ExecutionPersistRecovery, h.persistRecovery)
	jsonrpc.Serve(t, protocol.WaitProgress, h.waitProgress)
	jsonrpc.Serve(t, protocol.WorkSettleHold, h.settleHold)
	return t
}

// Gate answers an extension's request before any handler runs, as the
// daemon does (protocol.CheckCallback): a method that is not catalogued or
// is host-to-extension is method_not_found, one the manifest does not
// enable is undeclared, and one this host does not serve is unsupported.
// Use it as the Gate of the connection that serves Table.
func (h *Host) Gate(_ context.Context, method string) error {
	return protocol.CheckCallback(h.m, method, h.table.Has, false)
}

// Put seeds a KV value, with no rules: it is what the store held before
// the extension started.
func (h *Host) Put(namespace, key string, value []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.put(namespace, key, value)
}

// put writes a value; h.mu is held.
func (h *Host) put(namespace, key string, value []byte) {
	if h.kv[namespace] == nil {
		h.kv[namespace] = map[string][]byte{}
	}
	h.kv[namespace][key] = bytes.Clone(value)
}

// KV returns a copy of one namespace.
func (h *Host) KV(namespace string) map[string][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range h.kv[namespace] {
		out[k] = bytes.Clone(v)
	}
	return out
}

// Commits returns every applied kv.commit batch, in order.
func (h *Host) Commits() []protocol.KVCommitParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.KVCommitParams(nil), h.commits...)
}

// Events returns every accepted Event, in sequence order, in every scope.
func (h *Host) Events() []protocol.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.Event(nil), h.events...)
}

// Accept accepts an Event as ingress or another extension would: none of
// this extension's rules apply (any source, family and scope), only the
// log's: a source, delivery ID and type are required, one Event per source
// and delivery ID (added false and the Event already there for a repeat),
// and a parent must be an accepted Event of the same scope. Tests use it to
// seed the Events a package reads.
func (h *Host) Accept(e protocol.Emission) (protocol.Event, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tx := h.begin()
	ev, added, err := tx.accept(e)
	if err != nil {
		return protocol.Event{}, false, err
	}
	tx.apply()
	return ev, added, nil
}
