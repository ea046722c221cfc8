// Package service is the scoped host service: the handlers for every call
// an extension makes to the host (E→H), bound to the identity the host
// started the process with, never to anything the extension sends. It
// applies the authority and scoping rules (KV only in the extension's
// namespaces, state reads only in scopes whose configuration uses it,
// event.accept only derives, secrets only in scopes where it has an entry
// and as its entries select) on top of the store, answering each call from
// the extension's projection of the current configuration generation.
package service

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Deps is what a service needs from the daemon.
type Deps struct {
	DB *pebblekv.DB
	// Generation returns the current configuration generation; the
	// service reads it once per call, so a call answers from one
	// generation even while an apply swaps it.
	Generation func() *config.Generation
	// Limits are the causal bounds of derived Events.
	Limits pebblekv.Limits
	// Now is the host's clock (default time.Now).
	Now func() time.Time
	// Logger receives refusals worth an operator's look.
	Logger *slog.Logger
	// Accepted is told the sequence of every Event the service accepted,
	// so the daemon can react (nil: nothing).
	Accepted func(seq uint64)
}

// Service serves one extension.
type Service struct {
	m    *protocol.Manifest
	name string
	deps Deps

	// Counters for the operator.
	refused atomic.Int64
}

// New binds a service to the extension whose manifest is m.
func New(m *protocol.Manifest, deps Deps) *Service {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{m: m, name: m.Name, deps: deps}
}

// Refused counts the calls this service refused.
func (s *Service) Refused() int64 { return s.refused.Load() }

// Table is the handlers, for the extension's session. Methods the service
// does not list are answered unsupported by the session.
func (s *Service) Table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Handle(t, protocol.MethodKVGet, s.kvGet)
	jsonrpc.Handle(t, protocol.MethodKVList, s.kvList)
	jsonrpc.Handle(t, protocol.MethodKVCommit, s.kvCommit)
	jsonrpc.Handle(t, "state.sequence", s.stateSequence)
	jsonrpc.Handle(t, "state.event", s.stateEvent)
	jsonrpc.Handle(t, "state.events", s.stateEvents)
	jsonrpc.Handle(t, "state.work_events", s.stateWorkEvents)
	jsonrpc.Handle(t, "state.scopes", s.stateScopes)
	jsonrpc.Handle(t, "state.scope", s.stateScope)
	jsonrpc.Handle(t, "event.accept", s.eventAccept)
	jsonrpc.Handle(t, "secret.resolve", s.secretResolve)
	return t
}

// Served lists the methods Table serves, for the catalogue's test.
func Served() []string {
	return []string{protocol.MethodKVGet, protocol.MethodKVList, protocol.MethodKVCommit,
		"state.sequence", "state.event", "state.events", "state.work_events", "state.scopes", "state.scope",
		"event.accept", "secret.resolve"}
}

func (s *Service) refuse(err error) error {
	s.refused.Add(1)
	return err
}

// projection is what the extension sees of the current generation.
func (s *Service) projection() *config.Projection {
	return s.deps.Generation().For(s.m)
}

// scopes are the scopes whose configuration uses the extension, sorted.
// The slice is shared: never modify it.
func (s *Service) scopes() []string { return s.projection().ScopeIDs() }

// inScope reports whether the extension may read or write in scope.
func (s *Service) inScope(scope string) bool { return s.projection().Uses(scope) }

func (s *Service) ownNamespace(ns string) error {
	if !protocol.Namespace(s.name, ns) {
		return s.refuse(protocol.Errorf(protocol.ErrUnauthorized,
			"namespace %q is not %s's: an extension reads and writes only %s and %s.*", ns, s.name, s.name, s.name))
	}
	return nil
}

func (s *Service) kvGet(_ context.Context, p protocol.KVGetParams) (protocol.KVGetResult, error) {
	if err := s.ownNamespace(p.Namespace); err != nil {
		return protocol.KVGetResult{}, err
	}
	var res protocol.KVGetResult
	err := s.deps.DB.View(func(r *pebblekv.Reader) error {
		v, ver, found, err := r.KVGet(p.Namespace, p.Key)
		res = protocol.KVGetResult{Found: found, Value: v, Version: ver}
		return err
	})
	return res, err
}

func (s *Service) kvList(_ context.Context, p protocol.KVListParams) (protocol.KVListResult, error) {
	if err := s.ownNamespace(p.Namespace); err != nil {
		return protocol.KVListResult{}, err
	}
	var res protocol.KVListResult
	err := s.deps.DB.View(func(r *pebblekv.Reader) error {
		items, more, err := r.KVList(p.Namespace, p.Prefix, p.After, p.Limit)
		if items == nil {
			items = []protocol.KVItem{}
		}
		res = protocol.KVListResult{Items: items, More: more}
		return err
	})
	return res, err
}

func (s *Service) kvCommit(_ context.Context, p protocol.KVCommitParams) (protocol.KVCommitResult, error) {
	for _, e := range p.Emissions {
		if err := s.checkEmission(e.Scope, e.Source, e.Type, e.Payload.Schema); err != nil {
			return protocol.KVCommitResult{}, err
		}
	}
	res, err := s.deps.DB.CommitKV(s.name, p, s.deps.Limits)
	if err != nil {
		return res, s.refuse(err)
	}
	if len(p.Emissions) > 0 {
		s.nudge()
	}
	return res, nil
}

// checkEmission applies the checks every Event the extension writes must
// pass before the store sees it: a configured scope that uses it, its own
// source, its own declared family, its current schema.
func (s *Service) checkEmission(scope, source, typ, schema string) error {
	if !s.inScope(scope) {
		return s.refuse(protocol.Errorf(protocol.ErrNotFound, "scope %q is not one whose configuration uses %s", scope, s.name))
	}
	if !protocol.SourceNamespace(s.name, source) {
		return s.refuse(protocol.Errorf(protocol.ErrUnauthorized, "source %q is not %s's: use %s or %s/…", source, s.name, s.name, s.name))
	}
	if !s.m.Family(typ) {
		return s.refuse(protocol.Errorf(protocol.ErrUndeclared, "family %q is not declared by %s's manifest", typ, s.name))
	}
	if err := s.m.CheckWrite(schema); err != nil {
		return s.refuse(err)
	}
	return nil
}

func (s *Service) nudge() {
	if s.deps.Accepted == nil {
		return
	}
	var seq uint64
	_ = s.deps.DB.View(func(r *pebblekv.Reader) error {
		var err error
		seq, err = r.LatestSequence()
		return err
	})
	s.deps.Accepted(seq)
}

func wireEvents(es []pebblekv.Event) []protocol.Event {
	out := make([]protocol.Event, len(es))
	for i, e := range es {
		out[i] = e.Wire()
	}
	return out
}
