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
