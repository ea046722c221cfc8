// Package memhost is an in-memory host service for one extension: the host
// side of the KV, emission, artifact and delivery methods, answering as the
// daemon does (the same protocol rules for kv.commit and for callbacks),
// with no store. sdktest serves extensions against it; so does anything
// that needs the host side of the protocol without a daemon.
package memhost

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Host is an in-memory host service for one extension: KV with the
// daemon's rules (versions, preconditions, the extension's own namespaces
// only, all-or-nothing batches, the size bounds, kv.list paged by count and
// bytes), kv.commit emissions into a small event log (its own families and
// sources, current schemas, configured scopes, dedupe by source and
// delivery ID), artifacts written in acknowledged chunks, and deliveries
// from the extension's receivers. It does not enforce causal limits. It is
// safe for concurrent use.
type Host struct {
	name   string
	m      *protocol.Manifest
	scopes []string
	rules  protocol.KVRules
	table  *jsonrpc.Table

	mu         sync.Mutex
	kv         map[string]map[string][]byte
	commits    []protocol.KVCommitParams
	events     []protocol.Event
	eventIndex map[string]int
	artifacts  map[string]*Artifact
	nextID     int
	deliveries []protocol.IngressDeliverParams
}

// Option configures a Host.
type Option func(*Host)

// WithManifest sets the manifest the host judges the extension by: the
// methods it enables, its families and its schemas. Without it the host
// knows only the extension's name: the methods every extension has, and no
// families, so every emission is refused undeclared.
func WithManifest(m *protocol.Manifest) Option { return func(h *Host) { h.m = m } }

// WithScopes sets the scopes whose configuration uses the extension: the
// only scopes its emissions may name. Without it there are none.
func WithScopes(scopes ...string) Option {
	return func(h *Host) { h.scopes = append(h.scopes, scopes...) }
}

// New returns an empty host for the extension named name. A manifest given
// with WithManifest must carry that name; another panics, naming both.
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
	h.rules = protocol.HostKVRules(h.m, h.inScope)
	h.table = h.newTable()
	return h
}

// inScope reports whether scope is one of the configured scopes.
func (h *Host) inScope(scope string) bool {
	return scope != "" && slices.Contains(h.scopes, scope)
}

// Table is the host's methods, for a session's or a test connection's
// Handlers. It is built once and only read.
func (h *Host) Table() *jsonrpc.Table { return h.table }

func (h *Host) newTable() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Serve(t, protocol.KVGet, h.get)
	jsonrpc.Serve(t, protocol.KVList, h.list)
	jsonrpc.Serve(t, protocol.KVCommit, h.commit)
	jsonrpc.Serve(t, protocol.ArtifactCreate, h.artifactCreate)
	jsonrpc.Serve(t, protocol.ArtifactWrite, h.artifactWrite)
	jsonrpc.Serve(t, protocol.ArtifactCommit, h.artifactCommit)
	jsonrpc.Serve(t, protocol.ArtifactAbort, h.artifactAbort)
	jsonrpc.Serve(t, protocol.IngressDeliver, h.deliver)
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

func (h *Host) deliver(_ context.Context, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error) {
	if !protocol.SourceNamespace(h.name, p.Source) {
		return protocol.IngressDeliverResult{}, protocol.Errorf(protocol.ErrUnauthorized, "source %q is not %s's", p.Source, h.name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.deliveries {
		if d.Source == p.Source && d.DeliveryID == p.DeliveryID {
			return protocol.IngressDeliverResult{Accepted: true, Duplicate: true}, nil
		}
	}
	h.deliveries = append(h.deliveries, p)
	return protocol.IngressDeliverResult{Accepted: true}, nil
}

// Put seeds a KV value.
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

// Commits returns every applied kv.commit batch.
func (h *Host) Commits() []protocol.KVCommitParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.KVCommitParams(nil), h.commits...)
}

// Events returns every accepted Event, in sequence order.
func (h *Host) Events() []protocol.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.Event(nil), h.events...)
}

// Deliveries returns every accepted delivery.
func (h *Host) Deliveries() []protocol.IngressDeliverParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.IngressDeliverParams(nil), h.deliveries...)
}
