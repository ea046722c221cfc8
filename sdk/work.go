package sdk

import (
	"context"

	"github.com/open-conduit/open-conduit/protocol"
)

// CancelWork cancels an open Work of one of the extension's own Work kinds
// (those it declares with WorkKind), wherever it is: a Work left in a scope
// that no longer uses the extension too. The Work records the extension's
// name and reason. A Work of another kind, or none, is ErrNotFound; a Work
// that is no longer open is ErrConflict.
func (h *Host) CancelWork(ctx context.Context, workID, reason string) error {
	_, err := invoke(ctx, h, protocol.WorkCancel, protocol.WorkCancelParams{WorkID: workID, Reason: reason})
	return err
}
