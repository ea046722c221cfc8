package sdktest

import (
	"context"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Render asks the extension to render ev (event.render) for no Work, as the
// daemon asks a family's owner, and returns its text. The harness sends ev
// as it is: unlike the daemon, it does not fall back to a generic rendering,
// so a refusal or an error comes back for the test to see.
func (h *Harness) Render(ctx context.Context, ev sdk.Event) (string, error) {
	res, err := invoke(h, ctx, protocol.EventRender, ev.Type, protocol.EventRenderParams{Event: ev})
	return res.Text, err
}
