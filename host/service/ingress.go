package service

import (
	"context"

	"github.com/open-conduit/open-conduit/protocol"
)

// ingressDeliver takes a delivery from the extension's own receiver: only
// from one of its sources, and answered only once its Events are durable,
// so the extension acknowledges upstream nothing that could be lost.
func (s *Service) ingressDeliver(ctx context.Context, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error) {
	if !protocol.SourceNamespace(s.name, p.Source) {
		return protocol.IngressDeliverResult{}, s.refuse(protocol.Errorf(protocol.ErrUnauthorized,
			"source %q is not %s's: deliver from %s or %s/…", p.Source, s.name, s.name, s.name))
	}
	if s.deps.Deliver == nil {
		return protocol.IngressDeliverResult{}, protocol.Errorf(protocol.ErrUnavailable, "this host takes no deliveries: its engine is not running")
	}
	res, err := s.deps.Deliver(ctx, s.name, p)
	if err != nil {
		return protocol.IngressDeliverResult{}, s.refuse(err)
	}
	return res, nil
}
