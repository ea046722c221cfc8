package memhost

import (
	"bytes"
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Execution is an execution of one of the extension's executors the host
// holds: seeded by a test (PutExecution), with the recovery metadata the
// extension last persisted for it.
type Execution struct {
	protocol.ExecutionRef
	// Work is the Work the execution runs; its artifacts are listed under
	// it.
	Work     string
	Recovery jsontext.Value
}

// PutExecution seeds an execution of the extension's own executors, as the
// scheduler would have started it: artifact.create may name it, and
// execution.persist_recovery persists its metadata under its lease (an
// execution with the same ID is replaced, a new epoch so fencing the old).
func (h *Host) PutExecution(ref protocol.ExecutionRef, work string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.executions == nil {
		h.executions = map[string]*Execution{}
	}
	h.executions[ref.Execution] = &Execution{ExecutionRef: ref, Work: work}
}

// Execution is a held execution, with its last persisted metadata.
func (h *Host) Execution(id string) (Execution, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x, ok := h.executions[id]
	if !ok {
		return Execution{}, false
	}
	out := *x
	out.Recovery = bytes.Clone(x.Recovery)
	return out, true
}

// persistRecovery keeps an execution's metadata as the daemon does: within
// protocol.MaxRecoveryBytes, for an execution the host holds (not_found
// otherwise), under its current epoch (conflict for another).
func (h *Host) persistRecovery(_ context.Context, p protocol.ExecutionPersistRecoveryParams) (protocol.ExecutionPersistRecoveryResult, error) {
	var none protocol.ExecutionPersistRecoveryResult
	if len(p.Recovery) > protocol.MaxRecoveryBytes {
		return none, protocol.Errorf(protocol.ErrTooLarge, "%s: %d bytes of recovery metadata are over the %d-byte bound",
			protocol.MethodExecutionPersistRecovery, len(p.Recovery), protocol.MaxRecoveryBytes)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	x, ok := h.executions[p.Execution]
	switch {
	case !ok:
		return none, protocol.Errorf(protocol.ErrNotFound, "%s: no execution %q of %s's executors", protocol.MethodExecutionPersistRecovery, p.Execution, h.name)
	case p.Epoch != x.Epoch:
		return none, protocol.Errorf(protocol.ErrConflict, "%s: execution %s is at lease epoch %d, not %d: a newer observer holds it",
			protocol.MethodExecutionPersistRecovery, p.Execution, x.Epoch, p.Epoch)
	}
	x.Recovery = bytes.Clone(p.Recovery)
	return none, nil
}

// Wait is an active Wait the host holds: seeded by a test (PutWait), with
// the progress line its owner last set.
type Wait struct {
	Work     string
	Owner    string
	Progress string
}

// PutWait seeds the active Wait of a Work, declared by owner's wait
// operation ("" for the builtin wait), replacing one the Work had.
func (h *Host) PutWait(work, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waits == nil {
		h.waits = map[string]*Wait{}
	}
	h.waits[work] = &Wait{Work: work, Owner: owner}
}

// Wait is the active Wait of a Work the host holds.
func (h *Host) Wait(work string) (Wait, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.waits[work]
	if !ok {
		return Wait{}, false
	}
	return *w, true
}

// waitProgress sets a held Wait's progress line as the daemon does: only
// its owner may (unauthorized otherwise), a Work with no active Wait is
// not_found, and the line is cut to protocol.MaxWaitProgress.
func (h *Host) waitProgress(_ context.Context, p protocol.WaitProgressParams) (protocol.WaitProgressResult, error) {
	var none protocol.WaitProgressResult
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.waits[p.Work]
	switch {
	case !ok:
		return none, protocol.Errorf(protocol.ErrNotFound, "%s: Work %q has no active Wait", protocol.MethodWaitProgress, p.Work)
	case w.Owner != h.name:
		return none, protocol.Errorf(protocol.ErrUnauthorized, "%s: the Wait of Work %s was not declared by %s's wait operation; only its owner sets its progress",
			protocol.MethodWaitProgress, p.Work, h.name)
	}
	w.Progress = protocol.CutLine(p.Progress, protocol.MaxWaitProgress)
	return none, nil
}
