package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Start gates' pace.
const (
	// admitTimeout bounds one work.admit call.
	admitTimeout = 30 * time.Second
	// admitRetryBase is how long a Work whose admission failed (a gate
	// answered an error, timed out or was not running) waits before its
	// gates are asked again; it doubles to admitRetryMax.
	admitRetryBase = time.Second
	admitRetryMax  = 30 * time.Second
)

// StartGates is the optional view of the packages that gate the start of
// Work: without it no Work is gated.
type StartGates interface {
	// StartGates names, sorted, the installed packages (running or not)
	// whose start gate (work.admit) is enabled and whose configuration
	// uses scope. One that is not running fails the admission, so a gate
	// that is down holds Work back rather than letting it through.
	StartGates(scope string) []string
}

// admissions are the Works whose start gates are being asked, and those
// whose last admission failed, waiting to be asked again.
type admissions struct {
	mu       sync.Mutex
	inFlight map[string]bool
	retry    map[string]recoverRetry
}

// admitted reports whether w, about to start its first attempt, may start
// now: its start gates let it through before (or its hold was settled
// admitting it), or no gate is configured for its scope. A held Work may
// not; otherwise the gates are asked in the background (each Work once at
// a time, after its retry backoff), and the Work starts at a later pass.
func (s *scheduler) admitted(ctx context.Context, w pebblekv.Work, b config.Binding, now time.Time, soon func(time.Time)) bool {
	if w.Admitted {
		return true
	}
	if w.Hold.Held() {
		return false
	}
	sg, ok := s.e.d.Packages.(StartGates)
	if !ok {
		return true
	}
	gates := sg.StartGates(w.Scope)
	if len(gates) == 0 {
		return true
	}
	a := &s.adm
	a.mu.Lock()
	if a.inFlight == nil {
		a.inFlight, a.retry = map[string]bool{}, map[string]recoverRetry{}
	}
	if a.inFlight[w.ID] {
		a.mu.Unlock()
		return false
	}
	if r := a.retry[w.ID]; now.Before(r.at) {
		a.mu.Unlock()
		soon(r.at)
		return false
	}
	a.inFlight[w.ID] = true
	a.mu.Unlock()
	s.e.wg.Add(1)
	go func() {
		defer s.e.wg.Done()
		err := s.admit(ctx, w, b, gates)
		a.mu.Lock()
		delete(a.inFlight, w.ID)
		if err != nil {
			r := a.retry[w.ID]
			r.delay = min(max(r.delay*2, admitRetryBase), admitRetryMax)
			r.at = s.e.d.Clock.Now().Add(r.delay)
			a.retry[w.ID] = r
		} else {
			delete(a.retry, w.ID)
		}
		a.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			s.e.d.Logger.Warn("a start gate refused to start a Work for now; it is asked again", "work", w.ID, "err", err)
		}
		s.kick()
	}()
	return false
}

// admit asks each of gates, in order, about w's first attempt: the first
// hold is placed on the Work (and the other gates are not asked); when
// none holds, the Work is marked admitted. An error leaves the Work as it
// was.
func (s *scheduler) admit(ctx context.Context, w pebblekv.Work, b config.Binding, gates []string) error {
	p, err := s.e.admitParams(w, b)
	if err != nil {
		return err
	}
	for _, pkg := range gates {
		var res protocol.WorkAdmitResult
		cctx, cancel := context.WithTimeout(ctx, admitTimeout)
		err := s.e.d.Packages.Call(cctx, pkg, protocol.MethodWorkAdmit, p, &res)
		cancel()
		if err != nil {
			return fmt.Errorf("%s's %s: %w", pkg, protocol.MethodWorkAdmit, err)
		}
		if res.Hold != nil {
			return s.e.placeHold(w.ID, pkg, res.Hold.Reason)
		}
	}
	return s.e.updatePending(w.ID, func(cur *pebblekv.Work) { cur.Admitted = true })
}

// admitParams are what a start gate is shown: the Work, its binding and
// its first input (its trigger).
func (e *Engine) admitParams(w pebblekv.Work, b config.Binding) (protocol.WorkAdmitParams, error) {
	p := protocol.WorkAdmitParams{Work: *workView(w), Executor: b.Executor,
		Binding: protocol.RunBinding{Name: b.Name, Config: b.Config, Toolbelt: b.Toolbelt}}
	first := w.Trigger
	if first == "" && len(w.Inputs) > 0 {
		first = w.Inputs[0]
	}
	if first == "" {
		return p, nil
	}
	err := e.d.DB.View(func(rd *pebblekv.Reader) error {
		ev, found, err := rd.Event(first)
		if found {
			wire := ev.Wire()
			p.Input = &wire
		}
		return err
	})
	return p, err
}

// placeHold holds Work id for pkg's start gate, with the reason shown.
func (e *Engine) placeHold(id, pkg, reason string) error {
	reason = protocol.CutLine(reason, protocol.MaxHoldReason)
	return e.updatePending(id, func(w *pebblekv.Work) {
		w.Hold = &protocol.WorkHold{Package: pkg, Reason: reason, Since: e.d.Clock.Now()}
		w.Reason = protocol.HeldReason(pkg, reason)
	})
}

// updatePending changes Work id with fn while it is still pending, before
// its first attempt and neither held nor admitted; a Work that moved on
// meanwhile is left as it is.
func (e *Engine) updatePending(id string, fn func(w *pebblekv.Work)) error {
	changed := false
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		w, found, err := tx.Work(id)
		if err != nil || !found || w.State != pebblekv.WorkPending || w.Admitted || w.Hold.Held() {
			return err
		}
		hist, err := tx.ExecutionsOf(id)
		if err != nil || len(hist) > 0 {
			return err
		}
		fn(&w)
		w.Updated = e.d.Clock.Now()
		changed = true
		return tx.PutWork(w)
	})
	if err == nil && changed {
		e.changes.broadcast()
	}
	return err
}

// SettleHold settles, for package pkg, the hold its start gate placed on
// a Work (protocol.CheckSettleHold's rules, judged and written in one
// transaction): admitting lets the Work's next start through once without
// asking the gates again; refusing cancels the Work with the reason.
func (e *Engine) SettleHold(_ context.Context, pkg string, p protocol.WorkSettleHoldParams) error {
	changed := false
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		var w pebblekv.Work
		found := false
		if p.Work != "" {
			var err error
			if w, found, err = tx.Work(p.Work); err != nil {
				return err
			}
		}
		replay, err := protocol.CheckSettleHold(pkg, p, w.State, w.Hold, found)
		if err != nil || replay {
			return err
		}
		now := e.d.Clock.Now()
		reason := protocol.CutLine(p.Reason, protocol.MaxHoldReason)
		h := *w.Hold
		h.Settled, h.Admit, h.Key = true, p.Admit, p.Key
		w.Hold, w.Updated = &h, now
		if p.Admit {
			w.Admitted, w.Reason = true, ""
		} else {
			w.State, w.Reason = pebblekv.WorkCancelled, protocol.SettledCancelReason(pkg, reason)
		}
		changed = true
		return tx.PutWork(w)
	})
	if err == nil && changed {
		e.exec.kick()
		e.changes.broadcast()
	}
	return err
}
