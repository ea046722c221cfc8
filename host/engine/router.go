package engine

import "context"

// router routes accepted Events to Work. (The router part replaces this.)
type router struct{ e *Engine }

func newRouter(e *Engine) *router { return &router{e: e} }

func (r *router) run(ctx context.Context) { <-ctx.Done() }
