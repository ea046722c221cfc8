package memhost

import (
	"context"
	"sort"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// serveTimers registers timer.arm and timer.cancel. The host keeps the
// armed timers (Timers) and fires none: a test fires one by accepting its
// Event (Accept) or calling the extension's recurrence.next itself.
func (h *Host) serveTimers(t *jsonrpc.Table) {
	jsonrpc.Serve(t, protocol.TimerArm, h.timerArm)
	jsonrpc.Serve(t, protocol.TimerCancel, h.timerCancel)
}

func (h *Host) timerArm(_ context.Context, p protocol.TimerArmParams) (protocol.TimerArmResult, error) {
	if err := protocol.CheckTimerArm(h.m, h.inScope, p); err != nil {
		return protocol.TimerArmResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timers == nil {
		h.timers = map[string]protocol.TimerArmParams{}
	}
	h.timers[p.ID] = p
	return protocol.TimerArmResult{}, nil
}

func (h *Host) timerCancel(_ context.Context, p protocol.TimerCancelParams) (protocol.TimerCancelResult, error) {
	if err := protocol.CheckTimerID(p.ID); err != nil {
		return protocol.TimerCancelResult{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, found := h.timers[p.ID]
	delete(h.timers, p.ID)
	return protocol.TimerCancelResult{Cancelled: found}, nil
}

// Timers are the extension's armed timers, by id.
func (h *Host) Timers() []protocol.TimerArmParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]protocol.TimerArmParams, 0, len(h.timers))
	for _, t := range h.timers {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
