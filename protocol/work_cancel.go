package protocol

import (
	"slices"
	"strings"
)

// MaxWorkCancelReasonBytes bounds the reason a work.cancel records.
const MaxWorkCancelReasonBytes = 1024

// The states of an open Work: the ones work.cancel may leave.
const (
	WorkStatePending = "pending"
	WorkStateRunning = "running"
	WorkStateWaiting = "waiting"
)

// WorkKind reports whether m declares the Work kind.
func (m *Manifest) WorkKind(kind string) bool {
	return kind != "" && slices.ContainsFunc(m.Provides.WorkKinds, func(k WorkKind) bool { return k.Kind == kind })
}

// CheckWorkCancel applies every rule of work.cancel for the extension whose
// manifest is m, to the Work w the host found under p.WorkID (found false:
// none), in this order: a Work ID; a reason within its bound, on one line;
// a Work of a kind m declares, wherever it is, so a package can retire
// Work left in a scope that no longer uses it (Work of another kind reads
// as no Work at all, so a package learns nothing of what it may not
// touch); an open Work (pending, running or waiting). Every host judges
// work.cancel by it.
func CheckWorkCancel(m *Manifest, p WorkCancelParams, w WorkView, found bool) error {
	switch {
	case p.WorkID == "":
		return Errorf(ErrInvalid, "work.cancel needs a work_id: the ID of a Work of one of %s's own kinds", m.Name)
	case len(p.Reason) > MaxWorkCancelReasonBytes:
		return Errorf(ErrTooLarge, "a reason of %d bytes is over the %d-byte bound: shorten it", len(p.Reason), MaxWorkCancelReasonBytes)
	case strings.ContainsFunc(p.Reason, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return Errorf(ErrInvalid, "the reason holds a control character: give one line of text")
	case !found || !m.WorkKind(w.Kind):
		return Errorf(ErrNotFound, "no Work %q of %s's own kinds: a package cancels only Work of a kind it declares in provides.work_kinds", p.WorkID, m.Name)
	}
	switch w.State {
	case WorkStatePending, WorkStateRunning, WorkStateWaiting:
		return nil
	}
	return Errorf(ErrConflict, "Work %s is %s; only pending, running or waiting Work can be cancelled", p.WorkID, w.State)
}

// WorkCancelReason is the reason a Work cancelled by extension records.
func WorkCancelReason(extension, reason string) string {
	if reason == "" {
		return "cancelled by " + extension
	}
	return "cancelled by " + extension + ": " + reason
}
