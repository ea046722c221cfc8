package engine

import (
	"errors"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Both ways in bind an outside item's (source, item, version) to one
// canonical envelope (digest.ObservationEnvelope) the first time they see
// it: a reconcile observation always, a pushed draft when it names its item
// and version. The binding is the same store record either way, so a push
// and a later scan of the same item and version agree on what is new.

// draft is one Event a delivery drafted, as the host will accept it: its
// emission and, for a draft naming an item and version, its identity and
// envelope.
type draft struct {
	em            protocol.Emission
	item, version string
	// envelope is "" for a draft that names no item.
	envelope string
}

// errBindConflicts aborts a transaction: some draft or observation
// conflicts with its identity's binding.
type errBindConflicts struct {
	conflicts []pebblekv.ObservationConflict
}

func (e *errBindConflicts) Error() string { return "conflicting observations" }

// bindingConflict is the refusal of a delivery or page whose item and
// version were bound before to another envelope; the webhook listener
// answers it 409.
type bindingConflict struct{ err error }

func (c *bindingConflict) Error() string { return c.err.Error() }
func (c *bindingConflict) Unwrap() error { return c.err }

// isBindingConflict says err is such a refusal.
func isBindingConflict(err error) bool {
	_, ok := errors.AsType[*bindingConflict](err)
	return ok
}

// acceptDraft accepts one pushed draft in tx. A draft naming no item is
// accepted by its delivery ID alone. One naming an item is first a replay
// when its delivery ID was accepted before (nothing new); else, when its
// identity is bound, the bound Event with the same envelope (nothing new)
// or a conflict with another; else it is accepted and its identity bound.
func (e *Engine) acceptDraft(tx *pebblekv.Tx, d draft, now time.Time) (protocol.EmissionResult, *pebblekv.ObservationConflict, error) {
	if d.envelope != "" {
		_, replay, err := tx.EventByDelivery(d.em.Source, d.em.DeliveryID)
		if err != nil {
			return protocol.EmissionResult{}, nil, err
		}
		if !replay {
			b, found, err := tx.Observation(d.em.Source, d.item, d.version)
			if err != nil {
				return protocol.EmissionResult{}, nil, err
			}
			if found && b.Envelope != d.envelope {
				return protocol.EmissionResult{}, &pebblekv.ObservationConflict{Source: d.em.Source, Item: d.item, Version: d.version,
					Bound: b.Envelope, Refused: d.envelope, LastDelivery: d.em.DeliveryID}, nil
			}
			if found {
				return protocol.EmissionResult{EventID: b.Event}, nil, nil
			}
		}
	}
	ev, isNew, err := tx.Accept(pebblekv.EventInput{
		Scope: d.em.Scope, Source: d.em.Source, Type: d.em.Type, DeliveryID: d.em.DeliveryID,
		Payload: d.em.Payload, Time: now,
	}, e.d.Limits)
	if err != nil {
		return protocol.EmissionResult{}, nil, err
	}
	if d.envelope != "" && isNew {
		err = tx.PutObservation(pebblekv.Observation{Source: d.em.Source, Item: d.item, Version: d.version,
			Envelope: d.envelope, Event: ev.ID, Seen: now})
	}
	return protocol.EmissionResult{EventID: ev.ID, Added: isNew}, nil, err
}

// recordConflicts counts each refused identity in its own transaction, so
// an operator sees how often it was refused; a failure to record is logged
// and the refusal stands.
func (e *Engine) recordConflicts(conflicts []pebblekv.ObservationConflict, now time.Time) {
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		for _, c := range conflicts {
			if _, err := tx.RecordConflict(c, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.d.Logger.Warn("recording observation conflicts", "source", conflicts[0].Source, "err", err)
	}
}

// refuseDelivery records and logs a delivery's conflicts and answers the
// refusal: the first conflict in draft order names it, so the same
// delivery is refused with the same words each time.
func (i *ingress) refuseDelivery(pkg string, conflicts []pebblekv.ObservationConflict, now time.Time) error {
	i.e.recordConflicts(conflicts, now)
	first := conflicts[0]
	i.e.d.Logger.Warn("delivery refused: an Event's item and version were bound before to another envelope",
		"package", pkg, "source", first.Source, "delivery", first.LastDelivery, "item", first.Item, "version", first.Version,
		"conflicts", len(conflicts))
	return &bindingConflict{protocol.Errorf(protocol.ErrConflict,
		"delivery %q of source %s drafts %s, accepted before with another envelope (%d conflicting); nothing of the delivery is accepted: give a changed item a new version",
		first.LastDelivery, first.Source, protocol.ObservationDeliveryID(first.Item, first.Version), len(conflicts))}
}
