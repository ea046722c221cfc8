package protocol

import "time"

// Ingress limits the host applies to a webhook request.
const (
	// MaxWebhookBodyBytes bounds a webhook request's body; a longer one is
	// answered 413 before any package sees it.
	MaxWebhookBodyBytes = 1 << 20
	// WebhookHandleDeadlineMillis bounds webhook.handle, and each
	// ingress.push of its deliveries.
	WebhookHandleDeadlineMillis = 10_000
)

// WebhookHandleParams is one HTTP request under a webhook path the
// extension registered: its path, method, headers (canonical names) and
// body, and when the host received it.
type WebhookHandleParams struct {
	Path     string              `json:"path"`
	Method   string              `json:"method"`
	Headers  map[string][]string `json:"headers,omitempty"`
	Body     []byte              `json:"body,omitempty"`
	Received time.Time           `json:"received"`
}

// WebhookHandleResult is the extension's verdict on a request: the HTTP
// status to answer (2xx, or a refusal such as 401 for a bad signature, with
// no deliveries) and the deliveries a 2xx carries. The host answers the
// status only after every delivery's Events are durably accepted.
type WebhookHandleResult struct {
	Status     int        `json:"status"`
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Delivery is one input a source delivers, identified by (Source,
// DeliveryID): the host accepts a delivery's Events once, however often it
// is delivered. Payload is the extension's own, for its ingress.push.
type Delivery struct {
	Source     string  `json:"source"`
	DeliveryID string  `json:"delivery_id"`
	Payload    Payload `json:"payload"`
}

// IngressPushParams asks the extension to turn one delivery into the
// Events it observes.
type IngressPushParams = Delivery

// IngressPushResult drafts the Events of one delivery, all accepted in one
// transaction or none.
type IngressPushResult struct {
	Events []EventDraft `json:"events,omitempty"`
}

// EventDraft is one root Event a delivery becomes: of one of the
// extension's families, in a scope that uses it, under the delivery's
// source. DeliveryID, when set, tells several Events of one delivery apart;
// empty is the delivery's own ID.
//
// Item and Version, both or neither, name the outside item and version the
// Event reports, as an Observation does: the host binds (source, item,
// version) to the draft's envelope exactly as it binds a reconcile
// observation, so the same item and version delivered again, under any
// delivery ID, or observed by a scan, is nothing new, and with another
// envelope is a conflict that refuses the whole delivery.
type EventDraft struct {
	Scope      string  `json:"scope_id"`
	Type       string  `json:"type"`
	DeliveryID string  `json:"delivery_id,omitempty"`
	Item       string  `json:"item,omitempty"`
	Version    string  `json:"version,omitempty"`
	Payload    Payload `json:"payload"`
}

// Observation is the draft as the observation of its item and version it
// reports; ok is false for a draft that names none. A draft naming only one
// of them, or an item holding '@', is refused by CheckObservationIdentity.
func (d EventDraft) Observation() (o Observation, ok bool) {
	o = Observation{Item: d.Item, Version: d.Version, Scope: d.Scope, Type: d.Type, Payload: d.Payload}
	return o, d.Item != "" || d.Version != ""
}

// Ingress methods the host calls.
var (
	// WebhookHandle verifies one webhook request and names its deliveries.
	WebhookHandle = Desc[WebhookHandleParams, WebhookHandleResult]{Name: MethodWebhookHandle}
	// IngressPush turns one delivery into Event drafts.
	IngressPush = Desc[IngressPushParams, IngressPushResult]{Name: MethodIngressPush}
)
