package memhost

import (
	"context"
	"maps"
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
)

// configView is one configuration as the extension sees it: the scopes
// that use it with their views, and where it has an entry.
type configView struct {
	ids   []string
	views map[string]protocol.ScopeView
	entry map[string]bool
}

// newConfigView builds what the extension sees of scopes (which use it with
// none of its entries) and of its entries, enabled and disabled, as the
// daemon's projection does: a scope's view holds the extension's entries
// with their config, and a scope of disabled entries is marked disabled.
func newConfigView(scopes []string, enabled, disabled []protocol.Entry) *configView {
	c := &configView{views: map[string]protocol.ScopeView{}, entry: map[string]bool{}}
	add := func(id string) protocol.ScopeView {
		v, ok := c.views[id]
		if !ok {
			v = protocol.ScopeView{ID: id}
			c.ids = append(c.ids, id)
		}
		return v
	}
	for _, id := range scopes {
		if id != "" {
			c.views[id] = add(id)
		}
	}
	for i, list := range [][]protocol.Entry{enabled, disabled} {
		for _, e := range list {
			v := add(e.Scope)
			v.Disabled = v.Disabled || i == 1
			v.Entries = append(v.Entries, protocol.Entry{Scope: e.Scope, Type: e.Type, Name: e.Name, Config: e.Config, Connection: e.Connection})
			c.views[e.Scope] = v
			c.entry[e.Scope] = true
		}
	}
	slices.Sort(c.ids)
	return c
}

func (c *configView) uses(scope string) bool {
	_, ok := c.views[scope]
	return ok
}

// Configure makes the host's configuration the one p carries, as the
// daemon's projection sends it: p.Entries and p.Disabled are the
// extension's entries (their scopes use it, disabled or not), with the
// scopes WithScopes named. An entry with no scope, or of a type the
// manifest does not declare, is refused: the daemon never sends one. Calls
// already under way answer from the configuration they began with.
func (h *Host) Configure(p protocol.ConfigureParams) error {
	for _, e := range slices.Concat(p.Entries, p.Disabled) {
		if e.Scope == "" {
			return protocol.Errorf(protocol.ErrInvalid, "entry %q of type %q names no scope: give each entry its scope", e.Name, e.Type)
		}
		if !slices.ContainsFunc(h.m.Provides.Extensions, func(t protocol.ExtensionType) bool { return t.Type == e.Type }) {
			return protocol.Errorf(protocol.ErrUndeclared,
				"entry %q in scope %q is of type %q, which %s does not declare: the daemon sends an extension only entries of its own types",
				e.Name, e.Scope, e.Type, h.name)
		}
	}
	h.cfg.Store(newConfigView(h.scopes, p.Entries, p.Disabled))
	return nil
}

// notFound is the one answer for a record outside the extension's scopes
// and for one that does not exist, so a read is never an existence oracle.
func (h *Host) notFound(what, id string) error {
	return protocol.Errorf(protocol.ErrNotFound, "%s %q not found in %s's scopes", what, id, h.name)
}

func (h *Host) stateSequence(context.Context, struct{}) (protocol.StateSequenceResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return protocol.StateSequenceResult{Sequence: uint64(len(h.events))}, nil
}

func (h *Host) stateEvent(_ context.Context, p protocol.StateEventParams) (protocol.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, ok := h.eventIndex[p.ID]
	if !ok || !h.inScope(h.events[i].Scope) {
		return protocol.Event{}, h.notFound("event", p.ID)
	}
	return h.events[i], nil
}

// stateEvents pages the Events of the extension's scopes (or of the one
// p names, when it uses the extension) after a sequence, as the daemon's
// index does: by count and bytes, More when another follows.
func (h *Host) stateEvents(_ context.Context, p protocol.StateEventsParams) (protocol.StateEventsResult, error) {
	c := h.cfg.Load()
	in := c.uses
	if p.Scope != "" {
		if !c.uses(p.Scope) {
			return protocol.StateEventsResult{Events: []protocol.Event{}}, nil
		}
		in = func(s string) bool { return s == p.Scope }
	}
	page := protocol.NewPageBudget(p.Limit, protocol.StateEventsMax)
	res := protocol.StateEventsResult{Events: []protocol.Event{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev.Sequence <= p.After || !in(ev.Scope) {
			continue
		}
		if page.Full() || !page.Add(ev.WireSize()) {
			res.More = true
			break
		}
		res.Events = append(res.Events, ev)
		res.Next = ev.Sequence
	}
	return res, nil
}

// stateWorkEvents answers an empty page: this host runs no Work, so no
// Event is linked to one.
func (h *Host) stateWorkEvents(context.Context, protocol.StateWorkEventsParams) (protocol.StateEventsResult, error) {
	return protocol.StateEventsResult{Events: []protocol.Event{}}, nil
}

func (h *Host) stateScopes(context.Context, struct{}) (protocol.StateScopesResult, error) {
	c := h.cfg.Load()
	out := make([]protocol.ScopeView, len(c.ids))
	for i, id := range c.ids {
		out[i] = c.views[id]
	}
	return protocol.StateScopesResult{Scopes: out}, nil
}

func (h *Host) stateScope(_ context.Context, p protocol.StateScopeParams) (protocol.ScopeView, error) {
	v, ok := h.cfg.Load().views[p.ID]
	if !ok {
		return protocol.ScopeView{}, h.notFound("scope", p.ID)
	}
	return v, nil
}

// eventAccept only derives, as the daemon's does: the Event's records
// commit with it, only when it is new, all or nothing.
func (h *Host) eventAccept(_ context.Context, p protocol.EventAcceptParams) (protocol.EventAcceptResult, error) {
	if p.Parent == "" {
		return protocol.EventAcceptResult{}, protocol.Errorf(protocol.ErrInvalid,
			"event.accept only derives: name a parent Event; a root Event comes from ingress or a kv.commit emission")
	}
	if p.DeliveryID == "" {
		return protocol.EventAcceptResult{}, protocol.Errorf(protocol.ErrInvalid, "event.accept: delivery_id is required")
	}
	e := protocol.Emission{Scope: p.Scope, Source: p.Source, DeliveryID: p.DeliveryID, Type: p.Type, Parent: p.Parent, Payload: p.Payload}
	if err := h.rules.CheckEmission(e); err != nil {
		return protocol.EventAcceptResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	tx := h.begin()
	ev, added, err := tx.accept(e)
	if err != nil {
		return protocol.EventAcceptResult{}, err
	}
	if added && p.Records != nil {
		if len(p.Records.Emissions) > 0 {
			return protocol.EventAcceptResult{}, protocol.Errorf(protocol.ErrInvalid, "event.accept records carry KV writes only, not emissions")
		}
		if _, err := h.rules.Commit(tx, *p.Records); err != nil {
			return protocol.EventAcceptResult{}, err
		}
	}
	tx.apply()
	return protocol.EventAcceptResult{Event: ev, Added: added}, nil
}

// secretResolve answers only what the extension's entries select in a scope
// that uses it and holds one of its entries (WithSecrets). This host
// configures no connections, so one named is refused as the daemon refuses
// a connection its configuration lacks.
func (h *Host) secretResolve(_ context.Context, p protocol.SecretResolveParams) (protocol.SecretResolveResult, error) {
	c := h.cfg.Load()
	switch {
	case !c.uses(p.Scope):
		return protocol.SecretResolveResult{}, protocol.Errorf(protocol.ErrUnauthorized,
			"scope %q does not use %s, so it resolves no secrets there", p.Scope, h.name)
	case !c.entry[p.Scope]:
		return protocol.SecretResolveResult{}, protocol.Errorf(protocol.ErrUnauthorized, "package %s has no entry in scope %q", h.name, p.Scope)
	case p.Connection != "":
		return protocol.SecretResolveResult{}, protocol.Errorf(protocol.ErrUnauthorized, "connection %q is not configured", p.Connection)
	}
	selected := h.secrets[p.Scope]
	names := p.Names
	if len(names) == 0 {
		names = slices.Collect(maps.Keys(selected))
	}
	res := protocol.SecretResolveResult{Secrets: map[string]string{}}
	for _, n := range names {
		v, ok := selected[n]
		if !ok {
			return protocol.SecretResolveResult{}, protocol.Errorf(protocol.ErrUnauthorized,
				"secret %q is not selected by %s's entries in scope %q", n, h.name, p.Scope)
		}
		res.Secrets[n] = v
	}
	return res, nil
}
