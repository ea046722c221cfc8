package service

import (
	"context"
	"slices"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// notFound is the one answer for a record outside the extension's scopes
// and for one that does not exist, so a read is never an existence oracle.
func (s *Service) notFound(what, id string) error {
	return s.refuse(protocol.Errorf(protocol.ErrNotFound, "%s %q not found in %s's scopes", what, id, s.name))
}

func (s *Service) stateSequence(context.Context, struct{}) (protocol.StateSequenceResult, error) {
	var seq uint64
	err := s.deps.DB.View(func(r *pebblekv.Reader) error {
		var err error
		seq, err = r.LatestSequence()
		return err
	})
	return protocol.StateSequenceResult{Sequence: seq}, err
}

func (s *Service) stateEvent(_ context.Context, p protocol.StateEventParams) (protocol.Event, error) {
	var ev pebblekv.Event
	var found bool
	err := s.deps.DB.View(func(r *pebblekv.Reader) error {
		var err error
		ev, found, err = r.Event(p.ID)
		return err
	})
	if err != nil {
		return protocol.Event{}, err
	}
	if !found || !s.inScope(ev.Scope) {
		return protocol.Event{}, s.notFound("event", p.ID)
	}
	return ev.Wire(), nil
}

// stateEvents reads the extension's scopes from the store's scope index:
// a page costs the extension's own Events, not the retained log.
func (s *Service) stateEvents(_ context.Context, p protocol.StateEventsParams) (protocol.StateEventsResult, error) {
	scopes := s.scopes()
	if p.Scope != "" {
		if !slices.Contains(scopes, p.Scope) {
			return protocol.StateEventsResult{Events: []protocol.Event{}}, nil
		}
		scopes = []string{p.Scope}
	}
	return s.page(func(r *pebblekv.Reader) ([]pebblekv.Event, bool, error) {
		if len(scopes) == 0 {
			return nil, false, nil
		}
		return r.ScopeEventsPage(scopes, p.After, p.Limit)
	})
}

// stateWorkEvents reads one Work's Events from the Work index, filtered by
// the extension's scopes; a Work outside them reads as an empty page. It
// reads on past Events of other scopes, so a page comes back short only when
// its bytes are spent (and then says more) or at the end of the Work's
// Events.
func (s *Service) stateWorkEvents(_ context.Context, p protocol.StateWorkEventsParams) (protocol.StateEventsResult, error) {
	scopes := s.scopes()
	return s.page(func(r *pebblekv.Reader) ([]pebblekv.Event, bool, error) {
		page := protocol.NewPageBudget(p.Limit, protocol.StateEventsMax)
		var out []pebblekv.Event
		after := p.After
		for {
			es, more, err := r.WorkEventsPage(p.ID, after, page.Limit())
			if err != nil {
				return nil, false, err
			}
			for _, e := range es {
				if !slices.Contains(scopes, e.Scope) {
					continue
				}
				if !page.Add(e.Wire().WireSize()) {
					return out, true, nil
				}
				out = append(out, e)
			}
			if !more || len(es) == 0 {
				return out, false, nil
			}
			after = es[len(es)-1].Seq
		}
	})
}

func (s *Service) page(read func(r *pebblekv.Reader) ([]pebblekv.Event, bool, error)) (protocol.StateEventsResult, error) {
	var (
		es   []pebblekv.Event
		more bool
	)
	err := s.deps.DB.View(func(r *pebblekv.Reader) error {
		var err error
		es, more, err = read(r)
		return err
	})
	if err != nil {
		return protocol.StateEventsResult{}, err
	}
	res := protocol.StateEventsResult{Events: wireEvents(es), More: more}
	if len(es) > 0 {
		res.Next = es[len(es)-1].Seq
	}
	return res, nil
}

func (s *Service) stateScopes(context.Context, struct{}) (protocol.StateScopesResult, error) {
	return protocol.StateScopesResult{Scopes: s.projection().Views()}, nil
}

func (s *Service) stateScope(_ context.Context, p protocol.StateScopeParams) (protocol.ScopeView, error) {
	v, ok := s.projection().View(p.ID)
	if !ok {
		return protocol.ScopeView{}, s.notFound("scope", p.ID)
	}
	return v, nil
}

// eventAccept only derives: a root Event comes from ingress or a kv.commit
// emission. The Event's records commit with it, only when it is new.
func (s *Service) eventAccept(_ context.Context, p protocol.EventAcceptParams) (protocol.EventAcceptResult, error) {
	if p.Parent == "" {
		return protocol.EventAcceptResult{}, s.refuse(protocol.Errorf(protocol.ErrInvalid,
			"event.accept only derives: name a parent Event; a root Event comes from ingress or a kv.commit emission"))
	}
	if p.DeliveryID == "" {
		return protocol.EventAcceptResult{}, s.refuse(protocol.Errorf(protocol.ErrInvalid, "event.accept: delivery_id is required"))
	}
	e := protocol.Emission{Scope: p.Scope, Source: p.Source, DeliveryID: p.DeliveryID, Type: p.Type, Parent: p.Parent, Payload: p.Payload}
	if err := s.checkEmission(e); err != nil {
		return protocol.EventAcceptResult{}, err
	}
	var res protocol.EventAcceptResult
	err := s.deps.DB.Update(func(tx *pebblekv.Tx) error {
		ev, added, err := tx.Accept(pebblekv.EventInput{
			Scope: p.Scope, Source: p.Source, Type: p.Type, DeliveryID: p.DeliveryID,
			Parent: p.Parent, Payload: p.Payload, Time: s.deps.Now(),
		}, s.deps.Limits)
		if err != nil {
			return err
		}
		res = protocol.EventAcceptResult{Event: ev.Wire(), Added: added}
		if added && p.Records != nil {
			if len(p.Records.Emissions) > 0 {
				return protocol.Errorf(protocol.ErrInvalid, "event.accept records carry KV writes only, not emissions")
			}
			if _, err := tx.CommitBatch(s.kvRules(), *p.Records, s.deps.Limits); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return protocol.EventAcceptResult{}, s.refuse(err)
	}
	if res.Added {
		s.nudge()
	}
	return res, nil
}

// secretResolve answers only what the extension's entries select in a
// configured scope, or, in a scope with one of its entries, a connection
// they or the scope's bindings name, of one of its declared types, granted
// by the scope.
func (s *Service) secretResolve(_ context.Context, p protocol.SecretResolveParams) (protocol.SecretResolveResult, error) {
	g := s.deps.Generation()
	proj := g.For(s.m)
	if !proj.Uses(p.Scope) {
		return protocol.SecretResolveResult{}, s.refuse(protocol.Errorf(protocol.ErrUnauthorized,
			"scope %q does not use %s, so it resolves no secrets there", p.Scope, s.name))
	}
	refs, err := proj.SecretRefs(p.Scope, p.Connection)
	if err != nil {
		return protocol.SecretResolveResult{}, s.refuse(err)
	}
	names := p.Names
	if len(names) == 0 {
		for n := range refs {
			names = append(names, n)
		}
	}
	res := protocol.SecretResolveResult{Secrets: map[string]string{}}
	for _, n := range names {
		ref, ok := refs[n]
		if !ok {
			return protocol.SecretResolveResult{}, s.refuse(protocol.Errorf(protocol.ErrUnauthorized,
				"secret %q is not selected by %s's entries in scope %q", n, s.name, p.Scope))
		}
		v, err := config.Resolve(ref, g.Dir)
		if err != nil {
			// The reference's kind and target are the operator's to see,
			// in the daemon log; the extension learns only that it failed.
			s.deps.Logger.Warn("secret unresolved", "extension", s.name, "scope", p.Scope, "secret", n, "err", err)
			return protocol.SecretResolveResult{}, protocol.Errorf(protocol.ErrNotFound, "secret %q could not be resolved; the daemon log says why", n)
		}
		res.Secrets[n] = v
	}
	return res, nil
}
