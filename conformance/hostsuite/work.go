package hostsuite

import (
	"strings"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// workChecks are the checks of work.cancel.
var workChecks = []check{
	{"WorkCancelOfItsOwnKindCancelsItOnce", workCancelOwn, WorkSetup},
	{"WorkCancelRefusesWhatIsNotItsOwn", workCancelRefusals, WorkSetup},
}

// The Work WorkSetup seeds.
const (
	// WorkKind is the Work kind WorkSetup's manifest declares.
	WorkKind = Extension + ".job"
	// OwnWork is an open Work of WorkKind in Scope; LeftWork one in
	// Unconfigured, left where the extension's entry was removed;
	// OtherWork an open Work of another extension's kind in Scope;
	// DoneWork a completed Work of WorkKind in Scope.
	OwnWork   = "w_own"
	LeftWork  = "w_left"
	OtherWork = "w_other"
	DoneWork  = "w_done"
)

// WorkSetup is DefaultSetup with a manifest that declares WorkKind, so
// work.cancel is enabled, and the Work OwnWork, LeftWork, OtherWork and
// DoneWork seeded.
func WorkSetup() Setup {
	s := DefaultSetup()
	s.Manifest.Provides.WorkKinds = []protocol.WorkKind{{Kind: WorkKind}}
	s.Works = []protocol.WorkView{
		{ID: OwnWork, Scope: Scope, Kind: WorkKind, State: protocol.WorkStatePending, Keys: []string{"k1"}},
		{ID: LeftWork, Scope: Unconfigured, Kind: WorkKind, State: protocol.WorkStateWaiting},
		{ID: OtherWork, Scope: Scope, Kind: "other.job", State: protocol.WorkStatePending},
		{ID: DoneWork, Scope: Scope, Kind: WorkKind, State: "completed"},
	}
	return s
}

func (x *ext) cancelWork(id, reason string) error {
	_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.WorkCancel, protocol.WorkCancelParams{WorkID: id, Reason: reason})
	return err
}

// workCancelOwn: an open Work of the extension's own kind is cancelled,
// in a scope that uses it and in one that no longer does; cancelling it
// again is a conflict, since it is no longer open.
func workCancelOwn(x *ext) {
	for _, id := range []string{OwnWork, LeftWork} {
		if err := x.cancelWork(id, "retired"); err != nil {
			x.Fatalf("work.cancel of its own open Work %s: %v", id, err)
		}
		x.wantCode("work.cancel of "+id+" a second time", x.cancelWork(id, ""), protocol.ErrConflict)
	}
}

// workCancelRefusals: Work that is not the extension's to cancel is
// refused with its code, and a refused cancel changes nothing: its own
// Work is still open afterwards.
func workCancelRefusals(x *ext) {
	cases := []struct {
		name, id, reason string
		want             *protocol.Error
	}{
		{"another extension's kind", OtherWork, "", protocol.ErrNotFound},
		{"an unknown Work", "w_nowhere", "", protocol.ErrNotFound},
		{"a finished Work", DoneWork, "", protocol.ErrConflict},
		{"no work_id", "", "", protocol.ErrInvalid},
		{"a reason over two lines", OwnWork, "a\nb", protocol.ErrInvalid},
		{"a reason over its bound", OwnWork, strings.Repeat("r", protocol.MaxWorkCancelReasonBytes+1), protocol.ErrTooLarge},
	}
	for _, c := range cases {
		x.wantCode("work.cancel of "+c.name, x.cancelWork(c.id, c.reason), c.want)
	}
	if err := x.cancelWork(OwnWork, "after the refusals"); err != nil {
		x.Errorf("work.cancel of its own open Work after the refusals: %v; a refused cancel must change nothing", err)
	}
}
