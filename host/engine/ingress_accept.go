package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// Deliver takes one delivery from a package's own receiver (ingress.deliver):
// the package's ingress.push drafts its Events, which are accepted in one
// synced transaction before Deliver returns, so the package acknowledges
// upstream only what is durable. A delivery accepted before is accepted
// again as the same Events, none added.
func (e *Engine) Deliver(ctx context.Context, pkg string, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error) {
	if !jsontext.Value(p.Body).IsValid() {
		return protocol.IngressDeliverResult{}, protocol.Errorf(protocol.ErrInvalid,
			"ingress.deliver from %s: the body of delivery %q is not JSON; deliver the upstream's JSON envelope as it came", p.Source, p.DeliveryID)
	}
	d := protocol.Delivery{Source: p.Source, DeliveryID: p.DeliveryID, Payload: protocol.Payload{Data: jsontext.Value(p.Body)}}
	results, err := e.ingress.take(ctx, pkg, []protocol.Delivery{d})
	if err != nil {
		return protocol.IngressDeliverResult{}, err
	}
	res := protocol.IngressDeliverResult{Accepted: true, Events: results, Duplicate: len(results) > 0}
	for _, r := range results {
		if r.Added {
			res.Duplicate = false
		}
	}
	return res, nil
}

// take has pkg push each delivery and accepts every Event drafted, in one
// synced transaction: all of them, or, on any failure (a push that fails,
// an Event the rules refuse, the store), none.
func (i *ingress) take(ctx context.Context, pkg string, deliveries []protocol.Delivery) ([]protocol.EmissionResult, error) {
	if len(deliveries) == 0 {
		return nil, nil
	}
	e := i.e
	m, ok := e.d.Packages.Manifest(pkg)
	if !ok {
		return nil, protocol.Errorf(protocol.ErrUnavailable, "%s is not running, so it takes no delivery", pkg)
	}
	var drafts []draft
	for _, d := range deliveries {
		drafted, err := i.push(ctx, pkg, m, d)
		if err != nil {
			return nil, err
		}
		drafts = append(drafts, drafted...)
	}
	results := make([]protocol.EmissionResult, len(drafts))
	added := false
	now := e.d.Clock.Now()
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		added = false
		var conflicts []pebblekv.ObservationConflict
		for n, d := range drafts {
			res, c, err := e.acceptDraft(tx, d, now)
			if err != nil {
				return err
			}
			if c != nil {
				conflicts = append(conflicts, *c)
				continue
			}
			results[n] = res
			added = added || res.Added
		}
		if len(conflicts) > 0 {
			return &errBindConflicts{conflicts}
		}
		return nil
	})
	if bc, ok := errors.AsType[*errBindConflicts](err); ok {
		return nil, i.refuseDelivery(pkg, bc.conflicts, now)
	}
	if err != nil {
		return nil, err
	}
	if added {
		e.Notify()
	}
	return results, nil
}

// push checks one delivery's source, asks pkg for its Events, and checks
// each as every Event a package writes is checked: a scope that uses the
// package, one of its families, its source, its current schema; a draft
// naming an item and version also as an observation is, with its envelope
// settled.
func (i *ingress) push(ctx context.Context, pkg string, m *protocol.Manifest, d protocol.Delivery) ([]draft, error) {
	if err := i.checkSource(pkg, d); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, webhookDeadline)
	defer cancel()
	var res protocol.IngressPushResult
	if err := i.e.d.Packages.Call(pctx, pkg, protocol.MethodIngressPush, d, &res); err != nil {
		return nil, fmt.Errorf("ingress.push on %s for delivery %q: %w", pkg, d.DeliveryID, err)
	}
	rules := protocol.HostKVRules(m, i.generation().For(m).Uses)
	seen := map[string]bool{}
	out := make([]draft, 0, len(res.Events))
	for n, ev := range res.Events {
		em := protocol.Emission{Scope: ev.Scope, Source: d.Source, DeliveryID: d.DeliveryID, Type: ev.Type, Payload: ev.Payload}
		if ev.DeliveryID != "" {
			em.DeliveryID = ev.DeliveryID
		}
		if seen[em.DeliveryID] {
			return nil, protocol.Errorf(protocol.ErrInvalid,
				"%s drafted two Events with delivery ID %q for delivery %q; give each Event its own delivery_id", pkg, em.DeliveryID, d.DeliveryID)
		}
		seen[em.DeliveryID] = true
		if err := rules.CheckEmission(em); err != nil {
			return nil, fmt.Errorf("event %d of delivery %q from %s: %w", n, d.DeliveryID, pkg, err)
		}
		dr, err := identify(ev, em)
		if err != nil {
			return nil, fmt.Errorf("event %d of delivery %q from %s: %w", n, d.DeliveryID, pkg, err)
		}
		out = append(out, dr)
	}
	return out, nil
}

// identify settles a draft's identity and envelope when it names an item
// and version: both, and an item without '@', as an observation's.
func identify(ev protocol.EventDraft, em protocol.Emission) (draft, error) {
	o, ok := ev.Observation()
	if !ok {
		return draft{em: em}, nil
	}
	if err := protocol.CheckObservationIdentity(o); err != nil {
		return draft{}, err
	}
	env, err := digest.ObservationEnvelope(o, ev.Type)
	if err != nil {
		return draft{}, err
	}
	return draft{em: em, item: o.Item, version: o.Version, envelope: env}, nil
}

// checkSource refuses a delivery without an ID, or from a source that is
// not pkg's (or, when the routes know, that its last configure did not
// register).
func (i *ingress) checkSource(pkg string, d protocol.Delivery) error {
	if d.DeliveryID == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a delivery from %s has no delivery_id; give each delivery the upstream's id", d.Source)
	}
	if !protocol.SourceNamespace(pkg, d.Source) {
		return protocol.Errorf(protocol.ErrUnauthorized, "source %q is not %s's: a source is %s or %s/…", d.Source, pkg, pkg, pkg)
	}
	if sr, ok := i.webhookRoutes().(SourceRoutes); ok && !sr.RegisteredSource(pkg, d.Source) {
		return protocol.Errorf(protocol.ErrUnauthorized, "source %q is not one %s registered in its last configure; register it there", d.Source, pkg)
	}
	return nil
}

// generation is the live configuration (nil, which uses no scope, when
// the engine has none).
func (i *ingress) generation() *config.Generation {
	if i.e.d.Generation == nil {
		return nil
	}
	return i.e.d.Generation()
}
