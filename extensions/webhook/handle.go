package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// item is what one request says: the delivery's payload (the package's
// own, from webhook.handle to ingress.push) and the Event's data.
type item struct {
	Scope string         `json:"scope_id,omitempty"`
	Key   string         `json:"key"`
	Title string         `json:"title,omitempty"`
	Body  jsontext.Value `json:"body"`
}

// handle verifies a request's signature in constant time with the entry's
// connection's secret, then reads its delivery ID, key and title. A bad or
// missing signature is 401, a body or ID it cannot read 400; either with no
// delivery, so nothing is accepted.
func (reg *registry) handle(ctx context.Context, r *sdk.Request, p sdk.WebhookHandleParams) (sdk.WebhookHandleResult, error) {
	e, ok := reg.lookup(p.Path)
	if !ok {
		return protocol.WebhookHandleResult{Status: http.StatusNotFound}, nil
	}
	secret, err := e.secret(ctx, r.Host)
	if err != nil {
		return sdk.WebhookHandleResult{}, err
	}
	if secret == "" || !signed(secret, p.Body, header(p.Headers, SignatureHeader)) {
		return protocol.WebhookHandleResult{Status: http.StatusUnauthorized}, nil
	}
	var body any
	if err := json.Unmarshal(p.Body, &body); err != nil {
		return protocol.WebhookHandleResult{Status: http.StatusBadRequest}, nil
	}
	id, ok := e.deliveryID(body, p.Headers)
	if !ok {
		return protocol.WebhookHandleResult{Status: http.StatusBadRequest}, nil
	}
	key := id
	if e.config.KeyPointer != "" {
		if key, ok = pointerText(body, e.config.KeyPointer); !ok {
			return protocol.WebhookHandleResult{Status: http.StatusBadRequest}, nil
		}
	}
	title, _ := pointerText(body, e.config.TitlePointer)
	data, err := json.Marshal(item{Scope: e.Scope, Key: key, Title: title, Body: jsontext.Value(p.Body)})
	if err != nil {
		return sdk.WebhookHandleResult{}, err
	}
	return protocol.WebhookHandleResult{Status: http.StatusAccepted, Deliveries: []protocol.Delivery{{
		Source: e.source, DeliveryID: id, Payload: protocol.Payload{Data: data},
	}}}, nil
}

// secret resolves the entry's signing secret: its connection's secret, or,
// when the entry names no connection, the scope's secret named secret that
// the entry selects. A secret the host will not resolve for it is "" (every
// request is then refused 401); only a failure to ask is an error.
func (e entry) secret(ctx context.Context, h *sdk.Host) (string, error) {
	var res protocol.SecretResolveResult
	err := h.Call(ctx, protocol.MethodSecretResolve,
		protocol.SecretResolveParams{Scope: e.Scope, Connection: e.Connection, Names: []string{SecretName}}, &res)
	switch {
	case protocol.CodeOf(err) == protocol.CodeUnauthorized || protocol.CodeOf(err) == protocol.CodeNotFound:
		return "", nil
	case err != nil:
		return "", e.fail("resolving its signing secret: %v", err)
	}
	return res.Secrets[SecretName], nil
}

// signed reports whether sig is sha256=<hex of HMAC-SHA256(secret, body)>,
// compared in constant time.
func signed(secret string, body []byte, sig string) bool {
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
	if err != nil || !strings.HasPrefix(sig, "sha256=") {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign is the signature header's value for body under secret: what a
// sender (or a test) puts in X-Signature-256.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliveryID is the body's value at the delivery pointer, or the delivery
// header's.
func (e entry) deliveryID(body any, headers map[string][]string) (string, bool) {
	if e.config.DeliveryPointer != "" {
		return pointerText(body, e.config.DeliveryPointer)
	}
	name := e.config.DeliveryHeader
	if name == "" {
		name = DeliveryHeader
	}
	id := header(headers, name)
	return id, id != ""
}

// header is the first value of the header name, matched case-insensitively.
func header(h map[string][]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// pointerText is the value at JSON pointer ptr in v, as text: a string as
// it is, a number or boolean as written; anything else, or nothing there,
// is not found.
func pointerText(v any, ptr string) (string, bool) {
	if ptr == "" {
		return "", false
	}
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return "", false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			v = c[i]
		default:
			return "", false
		}
	}
	switch s := v.(type) {
	case string:
		return s, s != ""
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(s), true
	}
	return "", false
}

// push turns a delivery into its one Event: webhook.received in the
// entry's scope, with the key, the title and the body.
func push(_ context.Context, _ *sdk.Request, d sdk.Delivery) ([]sdk.EventDraft, error) {
	var it item
	if err := json.Unmarshal(d.Payload.Data, &it); err != nil || it.Scope == "" || it.Key == "" {
		return nil, sdk.Errorf(sdk.ErrInvalid, "delivery %q is not one webhook.handle made: its payload names no scope and key", d.DeliveryID)
	}
	scope := it.Scope
	it.Scope = ""
	data, err := json.Marshal(it)
	if err != nil {
		return nil, err
	}
	return []sdk.EventDraft{{Scope: scope, Type: Received, Payload: protocol.Payload{Schema: ReceivedSchema, Data: data}}}, nil
}

// match routes each webhook.received Event to the standing Work of its key,
// titled from the body (or the key).
func match(_ context.Context, _ *sdk.Request, p sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
	if p.Event.Type != Received {
		return protocol.RouteMatchResult{Reason: "webhook matches only " + Received + " Events"}, nil
	}
	var it item
	if err := json.Unmarshal(p.Event.Payload.Data, &it); err != nil || it.Key == "" {
		return protocol.RouteMatchResult{Reason: "the Event carries no key"}, nil
	}
	title := oneLine(it.Title)
	if title == "" {
		title = "webhook " + oneLine(it.Key)
	}
	return protocol.RouteMatchResult{
		Match: true, Reason: "a webhook delivery for key " + it.Key, Kind: ItemKind,
		Keys: []string{KeyPrefix + it.Key}, Display: &protocol.Display{Title: title},
	}, nil
}

// samples offers one delivery per route for a trace: a key with a title,
// as webhook.handle would have read it from a signed body.
func samples(_ context.Context, _ *sdk.Request, p sdk.RouteSamplesParams) ([]sdk.RouteSample, error) {
	data, err := json.Marshal(item{Key: "sample-1", Title: "A sample delivery", Body: jsontext.Value(`{"id":"sample-1"}`)})
	if err != nil {
		return nil, err
	}
	return []sdk.RouteSample{{
		ID: "delivery", Title: "a signed delivery for key sample-1",
		Event: sdk.SampleEvent{Type: Received, Payload: protocol.Payload{Schema: ReceivedSchema, Data: data}},
	}}, nil
}

// oneLine makes s one line of at most a display title's bytes, cut at a
// rune.
func oneLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }), " ")
	if len(s) <= protocol.MaxDisplayTitle {
		return s
	}
	cut := protocol.MaxDisplayTitle
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut]
}

// utf8Start reports whether b starts a UTF-8 sequence.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
