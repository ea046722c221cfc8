package memhost

import (
	"context"
	"sort"

	"github.com/open-conduit/open-conduit/protocol"
)

// workCancel cancels a seeded Work of one of the extension's own kinds,
// wherever it is, by protocol.CheckWorkCancel's rules, as the daemon does.
func (h *Host) workCancel(_ context.Context, p protocol.WorkCancelParams) (protocol.WorkCancelResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, found := h.works[p.WorkID]
	if err := protocol.CheckWorkCancel(h.m, p, w.WorkView, found); err != nil {
		return protocol.WorkCancelResult{}, err
	}
	w.State, w.Reason = "cancelled", protocol.WorkCancelReason(h.name, p.Reason)
	h.works[p.WorkID] = w
	return protocol.WorkCancelResult{}, nil
}

// Work is a Work the host holds: as seeded, with the reason of its state
// once the extension cancelled it.
type Work struct {
	protocol.WorkView
	// Reason says who cancelled it and why ("" until then).
	Reason string
	// Hold is the start gate's hold on it (PutHold), settled once the
	// extension settles it.
	Hold *protocol.WorkHold
}

// PutHold places a start gate's hold on a seeded Work, as the daemon does
// when a package's work.admit answers a hold: hold.Package is the package
// that placed it (the extension's own name for a hold it may settle).
func (h *Host) PutHold(work string, hold protocol.WorkHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.works[work]
	w.Hold = &hold
	h.works[work] = w
}

// settleHold settles a hold on a seeded Work by protocol.CheckSettleHold's
// rules, as the daemon does: admitting marks the hold settled; refusing
// cancels the Work.
func (h *Host) settleHold(_ context.Context, p protocol.WorkSettleHoldParams) (protocol.WorkSettleHoldResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, found := h.works[p.Work]
	replay, err := protocol.CheckSettleHold(h.name, p, w.State, w.Hold, found)
	if err != nil || replay {
		return protocol.WorkSettleHoldResult{}, err
	}
	hold := *w.Hold
	hold.Settled, hold.Admit, hold.Key = true, p.Admit, p.Key
	w.Hold = &hold
	if !p.Admit {
		w.State, w.Reason = "cancelled", protocol.SettledCancelReason(h.name, protocol.CutLine(p.Reason, protocol.MaxHoldReason))
	}
	h.works[p.Work] = w
	return protocol.WorkSettleHoldResult{}, nil
}

// PutWork seeds a Work, with no rules: what the router had created before
// the extension started, in any scope and of any kind. A Work with the same
// ID is replaced.
func (h *Host) PutWork(w protocol.WorkView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.works == nil {
		h.works = map[string]Work{}
	}
	h.works[w.ID] = Work{WorkView: w}
}

// Works are the Work the host holds, by ID.
func (h *Host) Works() []Work {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Work, 0, len(h.works))
	for _, w := range h.works {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
