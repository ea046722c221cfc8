package service

import (
	"context"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// timerArm stores one of the extension's timers, replacing the one of the
// same id (its count of firings kept). The rules are protocol.CheckTimerArm's: its own families and
// recurrence kinds, a scope that uses it.
func (s *Service) timerArm(_ context.Context, p protocol.TimerArmParams) (protocol.TimerArmResult, error) {
	if err := protocol.CheckTimerArm(s.m, s.inScope, p); err != nil {
		return protocol.TimerArmResult{}, s.refuse(err)
	}
	t := pebblekv.Timer{
		ID: pebblekv.TimerID(s.name, p.ID), Owner: s.name, Scope: p.Scope, Due: p.Due.UTC(),
		Family: p.Family, Payload: p.Payload, Recurrence: p.Recurrence,
	}
	err := s.deps.DB.Update(func(tx *pebblekv.Tx) error {
		old, found, err := tx.Timer(t.ID)
		if err != nil {
			return err
		}
		if found {
			t.Fired = old.Fired
		}
		return tx.PutTimer(t)
	})
	if err != nil {
		return protocol.TimerArmResult{}, err
	}
	s.timersChanged()
	return protocol.TimerArmResult{}, nil
}

// timerCancel removes one of the extension's own timers: the id is always
// read under the extension's name, so another's timer is never reached.
func (s *Service) timerCancel(_ context.Context, p protocol.TimerCancelParams) (protocol.TimerCancelResult, error) {
	if err := protocol.CheckTimerID(p.ID); err != nil {
		return protocol.TimerCancelResult{}, s.refuse(err)
	}
	var found bool
	err := s.deps.DB.Update(func(tx *pebblekv.Tx) error {
		var err error
		found, err = tx.DeleteTimer(pebblekv.TimerID(s.name, p.ID))
		return err
	})
	if err != nil {
		return protocol.TimerCancelResult{}, err
	}
	if found {
		s.timersChanged()
	}
	return protocol.TimerCancelResult{Cancelled: found}, nil
}

// timersChanged tells the scheduler the timers changed, so it looks again
// rather than sleeping to a due time that may be gone.
func (s *Service) timersChanged() {
	if s.deps.TimersChanged != nil {
		s.deps.TimersChanged()
	}
}
