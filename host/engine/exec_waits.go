package engine

import (
	"context"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// wake ends wt with what woke it, in tx: the Wait woken with its Wake and
// its Work pending again (so the next attempt starts, with the Wake as
// its woke).
func wake(tx *pebblekv.Tx, wt pebblekv.Wait, w *pebblekv.Work, by protocol.Wake) error {
	wt.State, wt.Wake, wt.Updated = pebblekv.WaitWoken, &by, by.At
	if err := tx.PutWait(wt); err != nil {
		return err
	}
	w.State, w.Reason, w.Updated = pebblekv.WorkPending, "", by.At
	return tx.PutWork(*w)
}

// cancelWait cancels wt in tx when has says there is one.
func cancelWait(tx *pebblekv.Tx, wt pebblekv.Wait, has bool, now time.Time) error {
	if !has {
		return nil
	}
	wt.State, wt.Updated = pebblekv.WaitCancelled, now
	return tx.PutWait(wt)
}

// wakeOnJoin wakes the active Wait of w, a waiting Work ev joins, in the
// routing transaction tx: the Wait woken by ev, w pending. w is changed
// in place; the caller writes it.
func (e *Engine) wakeOnJoin(tx *pebblekv.Tx, w *pebblekv.Work, ev pebblekv.Event) error {
	if w.State != pebblekv.WorkWaiting {
		return nil
	}
	wt, found, err := tx.ActiveWait(w.ID)
	if err != nil || !found {
		return err
	}
	now := e.d.Clock.Now()
	wire := ev.Wire()
	wt.State, wt.Wake, wt.Updated = pebblekv.WaitWoken, &protocol.Wake{Wait: wt.ID, Reason: protocol.WakeEvent, Event: &wire, At: now}, now
	if err := tx.PutWait(wt); err != nil {
		return err
	}
	w.State, w.Reason = pebblekv.WorkPending, ""
	e.exec.kick()
	return nil
}

// wakeDue wakes each active Wait whose due time passed and whose Work
// waits; a Wait of a Work still running is woken when that attempt
// settles, and one of a closed Work is cancelled. soon is told when to
// look again.
func (s *scheduler) wakeDue(now time.Time, soon func(time.Time)) error {
	var due []pebblekv.Wait
	var next time.Time
	var any bool
	err := s.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		if due, err = rd.DueWaits(now, execBatch); err != nil {
			return err
		}
		next, any, err = rd.NextWaitDue()
		return err
	})
	if err != nil {
		return err
	}
	if any && next.After(now) {
		soon(next)
	}
	for _, wt := range due {
		err := s.e.d.DB.Update(func(tx *pebblekv.Tx) error {
			cur, found, err := tx.Wait(wt.ID)
			if err != nil || !found || cur.State != pebblekv.WaitActive {
				return err
			}
			w, found, err := tx.Work(cur.Work)
			switch {
			case err != nil:
				return err
			case found && w.State == pebblekv.WorkRunning:
				soon(now.Add(execPoll))
				return nil
			case !found || w.State != pebblekv.WorkWaiting:
				return cancelWait(tx, cur, true, now)
			}
			return wake(tx, cur, &w, protocol.Wake{Wait: cur.ID, Reason: protocol.WakeTimeout, At: now})
		})
		if err != nil {
			return err
		}
	}
	if len(due) > 0 {
		s.e.changes.broadcast()
	}
	if len(due) == execBatch {
		soon(now)
	}
	return nil
}

// WorkChanged's part for running Work: a Work cancelled outside the engine
// (a package's work.cancel) has its Wait cancelled and its execution
// stopped at the scheduler's next pass.
func (s *scheduler) workChanged() {
	s.mu.Lock()
	s.sweep = true
	s.mu.Unlock()
	s.kick()
}

// sweepWaits cancels the active Waits of closed Work, once after each
// change made outside the engine.
func (s *scheduler) sweepWaits(ctx context.Context) {
	s.mu.Lock()
	sweep := s.sweep
	s.sweep = false
	s.mu.Unlock()
	if !sweep {
		return
	}
	now := s.e.d.Clock.Now()
	for after := ""; ctx.Err() == nil; {
		var ws []pebblekv.Wait
		var more bool
		err := s.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
			ws, more, err = rd.ActiveWaits(after, execBatch)
			return err
		})
		if err != nil {
			s.e.d.Logger.Warn("reading active Waits", "err", err)
			return
		}
		for _, wt := range ws {
			after = wt.ID
			if err := s.e.d.DB.Update(func(tx *pebblekv.Tx) error {
				w, found, err := tx.Work(wt.Work)
				if err != nil || (found && w.Open()) {
					return err
				}
				return cancelWait(tx, wt, true, now)
			}); err != nil {
				s.e.d.Logger.Warn("cancelling the Wait of a closed Work", "wait", wt.ID, "err", err)
			}
		}
		if !more {
			return
		}
	}
}

// declareWait writes x's Work's Wait for p, owned by owner, in one
// transaction: x must run at its epoch, its Work too, and the Work may
// have no other active Wait (conflict).
func (e *Engine) declareWait(x pebblekv.Execution, owner string, p protocol.WaitPlan) (pebblekv.Wait, error) {
	if p.TimeoutSeconds < 0 || p.TimeoutSeconds > protocol.MaxWaitTimeoutSeconds {
		return pebblekv.Wait{}, protocol.Errorf(protocol.ErrInvalid, "a Wait's timeout_seconds is 0 (none) to %d (30 days), not %d",
			protocol.MaxWaitTimeoutSeconds, p.TimeoutSeconds)
	}
	now := e.d.Clock.Now()
	wt := pebblekv.Wait{ID: pebblekv.NewWaitID(), Work: x.Work, Scope: x.Scope, Execution: x.ID, Owner: owner,
		Description: protocol.CutLine(p.Description, protocol.MaxWaitDescription), State: pebblekv.WaitActive, Created: now, Updated: now}
	if p.TimeoutSeconds > 0 {
		wt.Due = now.Add(time.Duration(p.TimeoutSeconds) * time.Second)
	}
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		cur, found, err := tx.Execution(x.ID)
		if err != nil {
			return err
		}
		if err := live(cur, found, x); err != nil {
			return err
		}
		w, found, err := tx.Work(x.Work)
		if err != nil {
			return err
		}
		if !found || w.State != pebblekv.WorkRunning {
			return protocol.Errorf(protocol.ErrConflict, "Work %s is not running; only a running attempt declares a Wait", x.Work)
		}
		if err := tx.PutWait(wt); err != nil {
			return err
		}
		cur.Wait = wt.ID
		return tx.PutExecution(cur)
	})
	if err != nil {
		return pebblekv.Wait{}, err
	}
	e.exec.kick()
	e.changes.broadcast()
	return wt, nil
}

// live answers whether a toolbelt call as x may act: x must still run at
// the epoch its token was issued for.
func live(cur pebblekv.Execution, found bool, x pebblekv.Execution) error {
	if !found || cur.State != pebblekv.ExecRunning || cur.Epoch != x.Epoch || cur.TokenHash != x.TokenHash {
		return protocol.Errorf(protocol.ErrUnauthorized, "execution %s is no longer running under this token", x.ID)
	}
	return nil
}
