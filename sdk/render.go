package sdk

import (
	"context"
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
)

// EventRenderParams is one Event of the extension's own families to render,
// with the Work it is rendered for when there is one.
type EventRenderParams = protocol.EventRenderParams

// RenderMaxText bounds a rendering's text in bytes; the host renders an
// Event generically instead of taking a longer answer.
const RenderMaxText = protocol.RenderMaxText

// RenderFunc answers event.render: the Event as Markdown-ish plain text for
// a prompt or an operator's view, at most RenderMaxText bytes, within
// protocol.RenderDeadline. It must be free of side effects. The host asks
// only for Events of the extension's own families whose payload it can
// read; an error makes the host render the Event generically.
type RenderFunc func(ctx context.Context, r *Request, p EventRenderParams) (string, error)

// Render renders the extension's own families' Events with fn and declares
// render in the manifest. An Event of a family the extension does not
// declare is refused undeclared, and a text over RenderMaxText is refused
// too_large, before either reaches the host. Registering twice panics.
func (x *Extension) Render(fn RenderFunc) *Extension {
	once("Render", x.Manifest.Provides.Render, fn == nil)
	x.Manifest.Provides.Render = true
	return x.Method(protocol.MethodEventRender, typed(protocol.MethodEventRender,
		func(ctx context.Context, r *Request, p EventRenderParams) (protocol.EventRenderResult, error) {
			if !x.ownsFamily(p.Event.Type) {
				return protocol.EventRenderResult{}, protocol.Errorf(protocol.ErrUndeclared,
					"%s does not declare family %q, so it does not render its Events; the host asks the family's owner", x.Manifest.Name, p.Event.Type)
			}
			text, err := fn(ctx, r, p)
			if err != nil {
				return protocol.EventRenderResult{}, err
			}
			if len(text) > RenderMaxText {
				return protocol.EventRenderResult{}, protocol.Errorf(protocol.ErrTooLarge,
					"the rendering of Event %s is %d bytes; render at most %d", p.Event.ID, len(text), RenderMaxText)
			}
			return protocol.EventRenderResult{Text: text}, nil
		}))
}

// ownsFamily reports whether the manifest declares family.
func (x *Extension) ownsFamily(family string) bool {
	return slices.ContainsFunc(x.Manifest.Provides.Families, func(f protocol.Family) bool { return f.Name == family })
}
