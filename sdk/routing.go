package sdk

import (
	"context"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Routing and ingress wire types, so a handler needs only this package.
type (
	// Route declares a route handler in the manifest; RouteHandler writes
	// it for you.
	Route = protocol.Route
	// WorkKind declares a kind of Work the extension's routes create, with
	// its policy (standing, trigger, timed, run-once).
	WorkKind = protocol.WorkKind
	// WorkView is a Work as the extension sees it.
	WorkView = protocol.WorkView
	// RouteMatchParams is one Event offered to one of the handler's routes.
	RouteMatchParams = protocol.RouteMatchParams
	// RouteMatchResult is a handler's verdict on one Event.
	RouteMatchResult = protocol.RouteMatchResult
	// RouteSamplesParams asks for one route's named sample Events.
	RouteSamplesParams = protocol.RouteSamplesParams
	// RouteSample is one named sample Event an operator may trace.
	RouteSample = protocol.RouteSample
	// SampleEvent is a sample's hypothetical Event.
	SampleEvent = protocol.SampleEvent
	// Display is what a Work shows operators: title, ref, requester, links.
	Display = protocol.Display
	// WorkKindTriggerParams lists a new Work's inputs for its kind's
	// trigger choice.
	WorkKindTriggerParams = protocol.WorkKindTriggerParams
	// WebhookHandleParams is one HTTP request under a registered path.
	WebhookHandleParams = protocol.WebhookHandleParams
	// WebhookHandleResult is the status to answer and the deliveries a 2xx
	// carries.
	WebhookHandleResult = protocol.WebhookHandleResult
	// Delivery is one input a source delivers, accepted once per (source,
	// delivery ID).
	Delivery = protocol.Delivery
	// EventDraft is one root Event a delivery becomes.
	EventDraft = protocol.EventDraft
	// IngressReconcileParams asks for one page of a source's scan.
	IngressReconcileParams = protocol.IngressReconcileParams
	// IngressReconcileResult is one page of observations.
	IngressReconcileResult = protocol.IngressReconcileResult
	// Observation is the state of one outside item at one version.
	Observation = protocol.Observation
)

// ValidateRoute is ValidateParams.Kind for a route on one of the
// extension's handlers.
const ValidateRoute = protocol.ValidateRoute

// RouteFunc answers route.match for one route handler. It runs outside any
// transaction and must be free of side effects: a route trace asks it about
// Events that never happen. A verdict of no match says why in Reason.
type RouteFunc func(ctx context.Context, r *Request, p RouteMatchParams) (RouteMatchResult, error)

// SamplesFunc answers route.samples for one route handler: named sample
// Events for an operator's trace, any time in them written as of p.Now. Like
// RouteFunc it must be free of side effects.
type SamplesFunc func(ctx context.Context, r *Request, p RouteSamplesParams) ([]RouteSample, error)

// RouteOption sets a route handler's declaration.
type RouteOption func(*Route, *routeHandler)

// Samples makes the handler answer route.samples with fn.
func Samples(fn SamplesFunc) RouteOption {
	return func(d *Route, h *routeHandler) {
		if fn == nil {
			panic("sdk: Samples: nil function")
		}
		d.Samples, h.samples = true, fn
	}
}

// ChecksBinding marks a handler whose package's Validate checks the binding
// its routes bind (ValidateParams.Kind "binding").
func ChecksBinding() RouteOption { return func(d *Route, _ *routeHandler) { d.Binding = true } }

// RouteFields documents a route's config fields for the operator.
func RouteFields(fields ...Field) RouteOption {
	return func(d *Route, _ *routeHandler) { d.Fields = append(d.Fields, fields...) }
}

// routeHandler is one registered handler's code.
type routeHandler struct {
	match   RouteFunc
	samples SamplesFunc
}

// RouteHandler registers a route handler named name: fn answers route.match
// for every route that names it, and the handler is declared in the
// manifest (with samples when Samples is given). Registering a name twice
// panics.
func (x *Extension) RouteHandler(name string, fn RouteFunc, opts ...RouteOption) *Extension {
	once("RouteHandler "+name, x.routes[name] != nil, fn == nil)
	if x.routes == nil {
		x.routes = make(map[string]*routeHandler)
		x.Method(protocol.MethodRouteMatch, typed(protocol.MethodRouteMatch, x.routeMatch))
		x.Method(protocol.MethodRouteSamples, typed(protocol.MethodRouteSamples, x.routeSamples))
	}
	h := &routeHandler{match: fn}
	d := Route{Handler: name}
	for _, o := range opts {
		o(&d, h)
	}
	x.routes[name] = h
	x.Manifest.Provides.Routes = append(x.Manifest.Provides.Routes, d)
	return x
}

func (x *Extension) routeMatch(ctx context.Context, r *Request, p RouteMatchParams) (RouteMatchResult, error) {
	h, ok := x.routes[p.Route.Handler]
	if !ok {
		return RouteMatchResult{}, protocol.Errorf(protocol.ErrUndeclared, "route handler %q is not declared by %s", p.Route.Handler, x.Manifest.Name)
	}
	return h.match(ctx, r, p)
}

func (x *Extension) routeSamples(ctx context.Context, r *Request, p RouteSamplesParams) (protocol.RouteSamplesResult, error) {
	h, ok := x.routes[p.Route.Handler]
	if !ok || h.samples == nil {
		return protocol.RouteSamplesResult{}, protocol.Errorf(protocol.ErrUndeclared, "route handler %q of %s declares no samples", p.Route.Handler, x.Manifest.Name)
	}
	s, err := h.samples(ctx, r, p)
	if s == nil {
		s = []RouteSample{}
	}
	return protocol.RouteSamplesResult{Samples: s}, err
}

// TriggerFunc answers work_kind.trigger for one Work kind: the ID of the
// input that triggers a new Work (an ID that is not one of p.Inputs falls
// back to the first input). The host calls it inside the transaction that
// creates the Work, bounded: it must be pure and may not call the host.
type TriggerFunc func(ctx context.Context, r *Request, p WorkKindTriggerParams) (string, error)

// WorkKindOption sets a Work kind's policy beyond its declaration.
type WorkKindOption func(*WorkKind, *Extension)

// Trigger makes the kind's trigger input chosen by fn (work_kind.trigger).
func Trigger(fn TriggerFunc) WorkKindOption {
	return func(k *WorkKind, x *Extension) {
		if fn == nil {
			panic("sdk: Trigger: nil function")
		}
		k.Trigger = true
		if x.triggers == nil {
			x.triggers = make(map[string]TriggerFunc)
			x.Method(protocol.MethodWorkKindTrigger, typed(protocol.MethodWorkKindTrigger, x.workKindTrigger))
		}
		x.triggers[k.Kind] = fn
	}
}

// WorkKind declares a kind of Work the extension's routes create, with its
// policy (Standing, Timed, RunOnce set on k; a trigger with Trigger).
// Declaring a kind twice panics.
func (x *Extension) WorkKind(k WorkKind, opts ...WorkKindOption) *Extension {
	for _, have := range x.Manifest.Provides.WorkKinds {
		once("WorkKind "+k.Kind, have.Kind == k.Kind, false)
	}
	for _, o := range opts {
		o(&k, x)
	}
	x.Manifest.Provides.WorkKinds = append(x.Manifest.Provides.WorkKinds, k)
	return x
}

func (x *Extension) workKindTrigger(ctx context.Context, r *Request, p WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
	fn, ok := x.triggers[p.Kind]
	if !ok {
		return protocol.WorkKindTriggerResult{}, protocol.Errorf(protocol.ErrUndeclared, "Work kind %q of %s declares no trigger", p.Kind, x.Manifest.Name)
	}
	id, err := fn(ctx, r, p)
	return protocol.WorkKindTriggerResult{Trigger: id}, err
}

// WebhookFunc answers webhook.handle: it verifies one request under a path
// the extension's Configure registered and names its deliveries. A refusal
// is a status (401 for a bad signature) with no deliveries; the host answers
// a 2xx only once every delivery's Events are durably accepted.
type WebhookFunc func(ctx context.Context, r *Request, p WebhookHandleParams) (WebhookHandleResult, error)

// Webhook serves the extension's webhook paths with fn and declares that it
// has some. Registering twice panics.
func (x *Extension) Webhook(fn WebhookFunc) *Extension {
	once("Webhook", x.Manifest.Provides.Webhooks, fn == nil)
	x.Manifest.Provides.Webhooks = true
	return x.Method(protocol.MethodWebhookHandle, typed(protocol.MethodWebhookHandle, fn))
}

// PushFunc answers ingress.push: the Events one delivery becomes, all
// accepted in one transaction or none.
type PushFunc func(ctx context.Context, r *Request, d Delivery) ([]EventDraft, error)

// Push turns the extension's deliveries (a webhook's, or its own
// receiver's through Host.Deliver) into Events. Declare the sources' entry
// types with IngressType. Registering twice panics.
func (x *Extension) Push(fn PushFunc) *Extension {
	once("Push", x.methods[protocol.MethodIngressPush] != nil, fn == nil)
	return x.Method(protocol.MethodIngressPush, typed(protocol.MethodIngressPush,
		func(ctx context.Context, r *Request, d Delivery) (protocol.IngressPushResult, error) {
			evs, err := fn(ctx, r, d)
			return protocol.IngressPushResult{Events: evs}, err
		}))
}

// ReconcileFunc answers ingress.reconcile: one page of a scan of a source,
// within p.Limits. A page that is not Complete names the next page's token.
type ReconcileFunc func(ctx context.Context, r *Request, p IngressReconcileParams) (IngressReconcileResult, error)

// Reconcile serves the scans of the extension's registered sources: those
// its Configure answers with Reconcile set (the others are push-only). The
// host scans each on its schedule and advances a source's checkpoint only
// when a whole scan completes. Registering twice panics.
func (x *Extension) Reconcile(fn ReconcileFunc) *Extension {
	once("Reconcile", x.methods[protocol.MethodIngressReconcile] != nil, fn == nil)
	return x.Method(protocol.MethodIngressReconcile, typed(protocol.MethodIngressReconcile, fn))
}

// typed serves method with fn, decoding its params strictly as P: params it
// cannot decode are invalid_params, naming the method.
func typed[P, R any](method string, fn func(context.Context, *Request, P) (R, error)) MethodFunc {
	return func(ctx context.Context, r *Request, raw []byte) (any, error) {
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, protocol.Errorf(protocol.ErrInvalidParams, "%s params: %v", method, err)
		}
		res, err := fn(ctx, r, p)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}
