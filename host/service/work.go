package service

import (
	"context"
	"errors"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// workCancel cancels a Work of one of the extension's own kinds, wherever
// it is, by protocol.CheckWorkCancel's rules, judged and written in one
// transaction so the Work cannot change between the two. The Work records
// who cancelled it and why.
func (s *Service) workCancel(_ context.Context, p protocol.WorkCancelParams) (protocol.WorkCancelResult, error) {
	var refused error
	err := s.deps.DB.Update(func(tx *pebblekv.Tx) error {
		var w pebblekv.Work
		found := false
		if p.WorkID != "" {
			var err error
			if w, found, err = tx.Work(p.WorkID); err != nil {
				return err
			}
		}
		view := protocol.WorkView{ID: w.ID, Scope: w.Scope, Kind: w.Kind, State: w.State}
		if refused = protocol.CheckWorkCancel(s.m, p, view, found); refused != nil {
			return refused
		}
		w.State, w.Reason, w.Updated = pebblekv.WorkCancelled, protocol.WorkCancelReason(s.name, p.Reason), s.deps.Now().UTC()
		return tx.PutWork(w)
	})
	if refused != nil && errors.Is(err, refused) {
		return protocol.WorkCancelResult{}, s.refuse(err)
	}
	if err != nil {
		return protocol.WorkCancelResult{}, err
	}
	if s.deps.WorkChanged != nil {
		s.deps.WorkChanged()
	}
	return protocol.WorkCancelResult{}, nil
}

// settleHold settles a hold the extension's start gate placed: the engine
// judges it (protocol.CheckSettleHold: only the package that placed a hold
// settles it) and applies it in one transaction. Without an engine, the
// params are still judged first, so a malformed call is invalid on every
// host.
func (s *Service) settleHold(ctx context.Context, p protocol.WorkSettleHoldParams) (protocol.WorkSettleHoldResult, error) {
	var none protocol.WorkSettleHoldResult
	if p.Work == "" {
		return none, s.refuse(protocol.Errorf(protocol.ErrInvalid, "%s: work_id is required", protocol.MethodWorkSettleHold))
	}
	if s.deps.SettleHold == nil {
		return none, protocol.Errorf(protocol.ErrUnsupported, "%s: this host runs no Work", protocol.MethodWorkSettleHold)
	}
	return none, s.refuseCoded(s.deps.SettleHold(ctx, s.name, p))
}
