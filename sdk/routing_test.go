package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// routed is an extension with every typed routing and ingress registration:
// two route handlers (one with samples), a trigger kind, a webhook, push and
// reconcile.
func routed() *sdk.Extension {
	return sdk.New("router").
		Family("router.seen", sdk.Rederivable()).
		IngressType("router", "router.seen").
		RouteHandler("router-first", func(_ context.Context, _ *sdk.Request, p sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
			return sdk.RouteMatchResult{Match: true, Kind: "router.job", Keys: []string{"k:" + p.Event.ID}}, nil
		}, sdk.Samples(func(_ context.Context, _ *sdk.Request, p sdk.RouteSamplesParams) ([]sdk.RouteSample, error) {
			return []sdk.RouteSample{{ID: "one", Title: p.Now.UTC().Format(time.RFC3339), Event: sdk.SampleEvent{Type: "router.seen"}}}, nil
		})).
		RouteHandler("router-second", func(context.Context, *sdk.Request, sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
			return sdk.RouteMatchResult{Reason: "never"}, nil
		}).
		WorkKind(sdk.WorkKind{Kind: "router.job"}, sdk.Trigger(func(_ context.Context, _ *sdk.Request, p sdk.WorkKindTriggerParams) (string, error) {
			return p.Inputs[len(p.Inputs)-1].ID, nil
		})).
		Webhook(func(_ context.Context, _ *sdk.Request, p sdk.WebhookHandleParams) (sdk.WebhookHandleResult, error) {
			return sdk.WebhookHandleResult{Status: 202, Deliveries: []sdk.Delivery{{Source: "router/x", DeliveryID: p.Path}}}, nil
		}).
		Push(func(_ context.Context, _ *sdk.Request, d sdk.Delivery) ([]sdk.EventDraft, error) {
			return []sdk.EventDraft{{Scope: "s1", Type: "router.seen", DeliveryID: d.DeliveryID}}, nil
		}).
		Reconcile(func(_ context.Context, _ *sdk.Request, p sdk.IngressReconcileParams) (sdk.IngressReconcileResult, error) {
			return sdk.IngressReconcileResult{Complete: true, Checkpoint: p.Source + "@1"}, nil
		})
}

// TestTypedRoutingRegistrationsDeclareWhatTheyServe: each registration
// writes its manifest declaration (handlers with and without samples, the
// trigger policy, webhooks), so the two never disagree.
func TestTypedRoutingRegistrationsDeclareWhatTheyServe(t *testing.T) {
	p := routed().Manifest.Provides
	if len(p.Routes) != 2 || p.Routes[0].Handler != "router-first" || !p.Routes[0].Samples || p.Routes[1].Samples {
		t.Errorf("routes %+v, want router-first with samples then router-second without", p.Routes)
	}
	if len(p.WorkKinds) != 1 || !p.WorkKinds[0].Trigger {
		t.Errorf("work kinds %+v, want router.job with a trigger", p.WorkKinds)
	}
	if !p.Webhooks {
		t.Error("webhooks not declared")
	}
}

// TestTypedRoutingRegistrationsAnswerOverTheWire: each method reaches its
// typed function through a real connection, a handler is found by the
// route's name, and an undeclared handler, a handler without samples and
// params of the wrong shape are refused with their codes.
func TestTypedRoutingRegistrationsAnswerOverTheWire(t *testing.T) {
	h := sdktest.New(t, routed())
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	var m sdk.RouteMatchResult
	if err := h.Raw(ctx, protocol.MethodRouteMatch, sdk.RouteMatchParams{Scope: "s1", Route: protocol.RouteRef{Handler: "router-first"}, Event: sdk.Event{ID: "ev1"}}, &m); err != nil {
		t.Fatal(err)
	}
	if !m.Match || m.Keys[0] != "k:ev1" {
		t.Errorf("router-first: %+v", m)
	}
	if err := h.Raw(ctx, protocol.MethodRouteMatch, sdk.RouteMatchParams{Route: protocol.RouteRef{Handler: "router-second"}}, &m); err != nil || m.Match || m.Reason != "never" {
		t.Errorf("router-second: %+v, %v", m, err)
	}
	err := h.Raw(ctx, protocol.MethodRouteMatch, sdk.RouteMatchParams{Route: protocol.RouteRef{Handler: "router-third"}}, &m)
	if !errors.Is(err, sdk.ErrUndeclared) {
		t.Errorf("an undeclared handler: %v, want undeclared", err)
	}
	var s protocol.RouteSamplesResult
	if err := h.Raw(ctx, protocol.MethodRouteSamples, sdk.RouteSamplesParams{Route: protocol.RouteRef{Handler: "router-first"}, Now: now}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) != 1 || s.Samples[0].Title != "2026-11-30T12:00:00Z" {
		t.Errorf("samples %+v, want one written as of the host's now", s.Samples)
	}
	if err := h.Raw(ctx, protocol.MethodRouteSamples, sdk.RouteSamplesParams{Route: protocol.RouteRef{Handler: "router-second"}}, &s); !errors.Is(err, sdk.ErrUndeclared) {
		t.Errorf("samples of a handler without them: %v, want undeclared", err)
	}
	var tr protocol.WorkKindTriggerResult
	if err := h.Raw(ctx, protocol.MethodWorkKindTrigger, sdk.WorkKindTriggerParams{Kind: "router.job", Inputs: []sdk.Event{{ID: "a"}, {ID: "b"}}}, &tr); err != nil || tr.Trigger != "b" {
		t.Errorf("trigger: %+v, %v; want b", tr, err)
	}
	var wh sdk.WebhookHandleResult
	if err := h.Raw(ctx, protocol.MethodWebhookHandle, sdk.WebhookHandleParams{Path: "/router/x"}, &wh); err != nil || wh.Status != 202 || wh.Deliveries[0].DeliveryID != "/router/x" {
		t.Errorf("webhook: %+v, %v", wh, err)
	}
	var push protocol.IngressPushResult
	if err := h.Raw(ctx, protocol.MethodIngressPush, sdk.Delivery{Source: "router/x", DeliveryID: "d1"}, &push); err != nil || len(push.Events) != 1 || push.Events[0].DeliveryID != "d1" {
		t.Errorf("push: %+v, %v", push, err)
	}
	var rec sdk.IngressReconcileResult
	if err := h.Raw(ctx, protocol.MethodIngressReconcile, sdk.IngressReconcileParams{Source: "router/x"}, &rec); err != nil || rec.Checkpoint != "router/x@1" {
		t.Errorf("reconcile: %+v, %v", rec, err)
	}
	if err := h.Raw(ctx, protocol.MethodRouteMatch, map[string]any{"route": "not an object"}, &m); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("params of the wrong shape: %v, want invalid_params", err)
	}
}

// TestRegisteringARouteHandlerTwicePanics: a second registration of one
// name is a programming error, caught at build time of the extension.
func TestRegisteringARouteHandlerTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	fn := func(context.Context, *sdk.Request, sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
		return sdk.RouteMatchResult{}, nil
	}
	sdk.New("twice").RouteHandler("twice", fn).RouteHandler("twice", fn)
}
