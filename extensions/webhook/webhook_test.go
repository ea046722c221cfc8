package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

const secret = "s3cr3t"

// entry is a webhook entry in scope acme with config cfg.
func entry(name, cfg string) sdk.Entry {
	return sdk.Entry{Scope: "acme", Type: webhook.Name, Name: name, Config: jsontext.Value(cfg)}
}

// harness serves the package with two entries: "issues" keyed by
// /issue/id with a title, "ids" taking its delivery ID from the body.
func harness(t *testing.T) *sdktest.Harness {
	t.Helper()
	return sdktest.New(t, webhook.Extension(),
		sdktest.WithEntries(
			entry("issues", `{"key_pointer":"/issue/id","title_pointer":"/issue/title"}`),
			entry("ids", `{"path":"custom/ids","key_pointer":"/k","delivery_pointer":"/event/id"}`),
		),
		sdktest.WithSecrets("acme", map[string]string{webhook.SecretName: secret}))
}

// request is a webhook.handle request to path with body, signed by sig.
func request(path, body, sig, delivery string) protocol.WebhookHandleParams {
	h := map[string][]string{}
	if sig != "" {
		h[webhook.SignatureHeader] = []string{sig}
	}
	if delivery != "" {
		h[webhook.DeliveryHeader] = []string{delivery}
	}
	return protocol.WebhookHandleParams{Path: path, Method: http.MethodPost, Headers: h, Body: []byte(body)}
}

func TestWebhookConfigureRegistersEachEntrysPathAndSource(t *testing.T) {
	h := harness(t)
	res, err := h.Configure(context.Background(), sdk.ConfigureParams{Entries: []sdk.Entry{
		entry("issues", `{}`), entry("ids", `{"path":"custom/ids","source":"custom"}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.WebhookPaths, " "); got != "/webhook/acme/issues /webhook/custom/ids" {
		t.Errorf("paths: %s", got)
	}
	if len(res.Sources) != 2 || res.Sources[0].Name != "webhook/acme/issues" || res.Sources[1].Name != "webhook/custom" ||
		res.Sources[0].Families[0] != webhook.Received {
		t.Errorf("sources: %+v", res.Sources)
	}
	// Two entries on one path are refused.
	_, err = h.Configure(context.Background(), sdk.ConfigureParams{Entries: []sdk.Entry{
		entry("a", `{"path":"same"}`), entry("b", `{"path":"same"}`),
	}})
	if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), "/webhook/same") {
		t.Errorf("two entries on one path: %v", err)
	}
}

func TestWebhookHandleVerifiesTheSignatureAndReadsThePointers(t *testing.T) {
	h := harness(t)
	body := `{"issue":{"id":42,"title":"The export fails"}}`
	other := `{"k":"x","event":{"id":"e-7"}}`
	for _, tc := range []struct {
		name     string
		req      protocol.WebhookHandleParams
		status   int
		source   string
		delivery string
		key      string
		title    string
	}{
		{"good signature", request("/webhook/acme/issues", body, webhook.Sign(secret, []byte(body)), "d1"), 202, "webhook/acme/issues", "d1", "42", "The export fails"},
		{"a path beneath the entry's", request("/webhook/acme/issues/x", body, webhook.Sign(secret, []byte(body)), "d1"), 202, "webhook/acme/issues", "d1", "42", "The export fails"},
		{"delivery ID from the body's pointer", request("/webhook/custom/ids", other, webhook.Sign(secret, []byte(other)), ""), 202, "webhook/acme/ids", "e-7", "x", ""},
		{"missing signature", request("/webhook/acme/issues", body, "", "d1"), 401, "", "", "", ""},
		{"signature under another secret", request("/webhook/acme/issues", body, webhook.Sign("wrong", []byte(body)), "d1"), 401, "", "", "", ""},
		{"signature of another body", request("/webhook/acme/issues", body, webhook.Sign(secret, []byte(body+" ")), "d1"), 401, "", "", "", ""},
		{"signature without its sha256= prefix", request("/webhook/acme/issues", body, strings.TrimPrefix(webhook.Sign(secret, []byte(body)), "sha256="), "d1"), 401, "", "", "", ""},
		{"no delivery ID", request("/webhook/acme/issues", body, webhook.Sign(secret, []byte(body)), ""), 400, "", "", "", ""},
		{"no key at the pointer", request("/webhook/acme/issues", `{"issue":{}}`, webhook.Sign(secret, []byte(`{"issue":{}}`)), "d1"), 400, "", "", "", ""},
		{"a body that is not JSON", request("/webhook/acme/issues", `hi`, webhook.Sign(secret, []byte(`hi`)), "d1"), 400, "", "", "", ""},
		{"a path no entry has", request("/webhook/acme/nope", body, webhook.Sign(secret, []byte(body)), "d1"), 404, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res protocol.WebhookHandleResult
			if err := h.Raw(context.Background(), protocol.MethodWebhookHandle, tc.req, &res); err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d", res.Status, tc.status)
			}
			if tc.status != 202 {
				if len(res.Deliveries) != 0 {
					t.Fatalf("a %d carries deliveries: %+v", res.Status, res.Deliveries)
				}
				return
			}
			if len(res.Deliveries) != 1 {
				t.Fatalf("deliveries: %+v", res.Deliveries)
			}
			d := res.Deliveries[0]
			if d.Source != tc.source || d.DeliveryID != tc.delivery {
				t.Fatalf("delivery %s/%s, want %s/%s", d.Source, d.DeliveryID, tc.source, tc.delivery)
			}
			var push protocol.IngressPushResult
			if err := h.Raw(context.Background(), protocol.MethodIngressPush, d, &push); err != nil {
				t.Fatal(err)
			}
			if len(push.Events) != 1 || push.Events[0].Scope != "acme" || push.Events[0].Type != webhook.Received ||
				push.Events[0].Payload.Schema != webhook.ReceivedSchema {
				t.Fatalf("drafts: %+v", push.Events)
			}
			var data struct {
				Key   string         `json:"key"`
				Title string         `json:"title"`
				Body  jsontext.Value `json:"body"`
			}
			if err := json.Unmarshal(push.Events[0].Payload.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Key != tc.key || data.Title != tc.title || len(data.Body) == 0 {
				t.Fatalf("event data %+v, want key %q title %q", data, tc.key, tc.title)
			}
		})
	}
}

func TestWebhookWithoutASecretRefusesEveryRequest(t *testing.T) {
	h := sdktest.New(t, webhook.Extension(), sdktest.WithEntries(entry("issues", `{}`)))
	body := `{}`
	var res protocol.WebhookHandleResult
	if err := h.Raw(context.Background(), protocol.MethodWebhookHandle,
		request("/webhook/acme/issues", body, webhook.Sign("", []byte(body)), "d1"), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != 401 || len(res.Deliveries) != 0 {
		t.Fatalf("no secret configured: %+v, want 401 and nothing", res)
	}
}

func TestWebhookRouteMatchesOnlyItsEventsOneWorkPerKey(t *testing.T) {
	h := harness(t)
	for _, tc := range []struct {
		name  string
		event protocol.Event
		match bool
		keys  string
		title string
	}{
		{"a webhook delivery", protocol.Event{Type: webhook.Received, Payload: protocol.Payload{Data: jsontext.Value(`{"key":"42","title":"The export fails"}`)}}, true, "webhook:42", "The export fails"},
		{"no title: the key", protocol.Event{Type: webhook.Received, Payload: protocol.Payload{Data: jsontext.Value(`{"key":"42"}`)}}, true, "webhook:42", "webhook 42"},
		{"a title on two lines", protocol.Event{Type: webhook.Received, Payload: protocol.Payload{Data: jsontext.Value(`{"key":"42","title":"a\nb"}`)}}, true, "webhook:42", "a b"},
		{"another family", protocol.Event{Type: "manual.request"}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res struct {
				Match   bool     `json:"match"`
				Reason  string   `json:"reason"`
				Kind    string   `json:"kind"`
				Keys    []string `json:"keys"`
				Display *struct {
					Title string `json:"title"`
				} `json:"display"`
			}
			params := map[string]any{"scope_id": "acme", "route": map[string]any{"index": 0, "handler": webhook.Name}, "event": tc.event}
			if err := h.Raw(context.Background(), protocol.MethodRouteMatch, params, &res); err != nil {
				t.Fatal(err)
			}
			if res.Match != tc.match || res.Reason == "" {
				t.Fatalf("match %v (%s), want %v with a reason", res.Match, res.Reason, tc.match)
			}
			if !tc.match {
				return
			}
			if res.Kind != webhook.ItemKind || strings.Join(res.Keys, ",") != tc.keys || res.Display == nil || res.Display.Title != tc.title {
				t.Fatalf("answer %+v", res)
			}
		})
	}
}

func TestWebhookValidateRefusesPathsThatClimbOut(t *testing.T) {
	h := harness(t)
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{`{}`, true},
		{`{"path":"acme/issues","key_pointer":"/id"}`, true},
		{`{"path":"../hello"}`, false},
		{`{"path":"/abs"}`, false},
		{`{"path":"a//b"}`, false},
		{`{"key_pointer":"id"}`, false},
		{`{"secret":"x"}`, false},
	} {
		_, err := h.Validate(context.Background(), sdk.ValidateParams{Kind: sdk.ValidateExtension, Type: webhook.Name, Scope: "acme", Name: "e", Config: jsontext.Value(tc.config)})
		if (err == nil) != tc.ok {
			t.Errorf("validate %s: %v, want ok %v", tc.config, err, tc.ok)
		}
	}
}

func TestWebhookManifestIsValid(t *testing.T) {
	m := webhook.Extension().Manifest
	if err := m.Validate(); err != nil {
		t.Fatalf("the manifest breaks rules: %v", err)
	}
	for _, method := range []string{protocol.MethodWebhookHandle, protocol.MethodIngressPush, protocol.MethodRouteMatch} {
		if !m.Enabled(method) {
			t.Errorf("the manifest does not enable %s", method)
		}
	}
	if _, err := protocol.ParseCertification(webhook.Certification); err != nil {
		t.Errorf("certification.json: %v", err)
	}
}

// TestWebhookSampleIsADeliveryTheRouteMatches: the handler offers one
// sample delivery, and the same handler matches it into the standing Work
// of its key, so a trace of it shows the Work it would join.
func TestWebhookSampleIsADeliveryTheRouteMatches(t *testing.T) {
	h := harness(t)
	route := protocol.RouteRef{Handler: webhook.Name}
	var s protocol.RouteSamplesResult
	if err := h.Raw(context.Background(), protocol.MethodRouteSamples, protocol.RouteSamplesParams{Scope: "acme", Route: route}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) != 1 || s.Samples[0].Event.Type != webhook.Received {
		t.Fatalf("samples %+v, want one %s", s.Samples, webhook.Received)
	}
	ev := protocol.Event{Scope: "acme", Type: s.Samples[0].Event.Type, Payload: s.Samples[0].Event.Payload}
	var m protocol.RouteMatchResult
	if err := h.Raw(context.Background(), protocol.MethodRouteMatch, protocol.RouteMatchParams{Scope: "acme", Route: route, Event: ev}, &m); err != nil || !m.Match || strings.Join(m.Keys, ",") != "webhook:sample-1" {
		t.Errorf("the sample routes to %+v (%v), want the Work of key webhook:sample-1", m, err)
	}
}
