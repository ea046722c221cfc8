package engine

import "context"

// ingress takes webhook requests and deliveries in. (The ingress part
// replaces this.)
type ingress struct{ e *Engine }

func newIngress(e *Engine) *ingress { return &ingress{e: e} }

func (i *ingress) run(ctx context.Context) { <-ctx.Done() }
