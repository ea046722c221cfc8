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

	"github.com/open-conduit/open-conduit/host/artifacts"
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
	// TimersChanged is told when the extension armed or cancelled a timer,
	// so the scheduler wakes (nil: nothing).
	TimersChanged func()
	// Deliver takes a delivery from the extension's own receiver to the
	// engine, which accepts its Events durably before it returns (nil:
	// ingress.deliver answers unavailable).
	Deliver func(ctx context.Context, extension string, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error)
	// WorkChanged is told when the extension cancelled a Work, so what
	// follows Work changes wakes (nil: nothing).
	WorkChanged func()
	// Artifacts keeps what the extension writes through artifact.* (nil:
	// those answer unsupported).
	Artifacts *artifacts.Store
	// PersistRecovery and WaitProgress apply execution.persist_recovery
	// and wait.progress for the extension named pkg once the service has
	// judged the caller (nil: they answer unsupported).
	PersistRecovery func(ctx context.Context, pkg string, p protocol.ExecutionPersistRecoveryParams) error
	WaitProgress    func(ctx context.Context, pkg string, p protocol.WaitProgressParams) error
	// SettleHold applies work.settle_hold for the extension named pkg,
	// under protocol.CheckSettleHold (nil: it answers unsupported once the
	// params are judged).
	SettleHold func(ctx context.Context, pkg string, p protocol.WorkSettleHoldParams) error
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
// does not register are answered unsupported by the session; what it
// registers is what the catalogue marks served.
func (s *Service) Table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Serve(t, protocol.KVGet, s.kvGet)
	jsonrpc.Serve(t, protocol.KVList, s.kvList)
	jsonrpc.Serve(t, protocol.KVCommit, s.kvCommit)
	jsonrpc.Serve(t, protocol.StateSequence, s.stateSequence)
	jsonrpc.Serve(t, protocol.StateEvent, s.stateEvent)
	jsonrpc.Serve(t, protocol.StateEvents, s.stateEvents)
	jsonrpc.Serve(t, protocol.StateWorkEvents, s.stateWorkEvents)
	jsonrpc.Serve(t, protocol.StateScopes, s.stateScopes)
	jsonrpc.Serve(t, protocol.StateScope, s.stateScope)
	jsonrpc.Serve(t, protocol.EventAccept, s.eventAccept)
	jsonrpc.Serve(t, protocol.SecretResolve, s.secretResolve)
	jsonrpc.Serve(t, protocol.TimerArm, s.timerArm)
	jsonrpc.Serve(t, protocol.TimerCancel, s.timerCancel)
	jsonrpc.Serve(t, protocol.IngressDeliver, s.ingressDeliver)
	jsonrpc.Serve(t, protocol.WorkCancel, s.workCancel)
	jsonrpc.Serve(t, protocol.ArtifactCreate, s.artifactCreate)
	jsonrpc.Serve(t, protocol.ArtifactWrite, s.artifactWrite)
	jsonrpc.Serve(t, protocol.ArtifactCommit, s.artifactCommit)
	jsonrpc.Serve(t, protocol.ArtifactAbort, s.artifactAbort)
	jsonrpc.Serve(t, protocol.ExecutionPersistRecovery, s.persistRecovery)
	jsonrpc.Serve(t, protocol.WaitProgress, s.waitProgress)
	jsonrpc.Serve(t, protocol.WorkSettleHold, s.settleHold)
	return t
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
	if err := s.kvRules().CheckNamespace(ns); err != nil {
		return s.refuse(err)
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
	res, err := s.deps.DB.CommitBatch(s.kvRules(), p, s.deps.Limits)
	if err != nil {
		return res, s.refuse(err)
	}
	if len(p.Emissions) > 0 {
		s.nudge()
	}
	return res, nil
}

// kvRules are the rules every batch and Event the extension writes must
// pass: its own namespaces and sources, its declared families, its current
// schemas, and a configured scope that uses it.
func (s *Service) kvRules() protocol.KVRules {
	return protocol.HostKVRules(s.m, s.inScope)
}

// checkEmission applies the rules of one Event the extension writes before
// the store sees it.
func (s *Service) checkEmission(e protocol.Emission) error {
	if err := s.kvRules().CheckEmission(e); err != nil {
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
