// Package webhook is the generic signed-webhook source: each entry of type
// webhook gets a path under the daemon's webhook listener, where a sender
// posts JSON signed with HMAC-SHA256 under the entry's connection's secret
// (header X-Signature-256: sha256=<hex>, as GitHub signs). A request with a
// good signature becomes one webhook.received Event, identified by its
// delivery ID so a replay is accepted once; a bad or missing signature is
// 401 and nothing is accepted. Its route handler webhook makes one standing
// Work of kind webhook.item per correlation key, titled from the body, and
// it renders its Events for prompts and operators: title, key and body. The
// open-conduit binary serves it (open-conduit extension-run webhook); it is
// built on the SDK and the protocol's wire types, as a third party would
// build it.
package webhook

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Name is the package's name, its entry type's and its route handler's.
const Name = "webhook"

// What the package declares.
const (
	// Received is the family of the Events a request becomes.
	Received = "webhook.received"
	// ReceivedSchema is their payload's schema.
	ReceivedSchema = "webhook.received.v1"
	// ItemKind is the standing Work kind the route handler makes, one per
	// key.
	ItemKind = "webhook.item"
	// ConnectionType is the connection type whose secret signs bodies (a
	// config type of its own: an entry type and a connection type never
	// share a name).
	ConnectionType = "webhook-signing"
	// SecretName is the connection's secret that signs bodies.
	SecretName = "secret"
	// SignatureHeader carries sha256=<hex of HMAC-SHA256(secret, body)>.
	SignatureHeader = "X-Signature-256"
	// DeliveryHeader carries the delivery ID when the entry names no
	// delivery pointer or header of its own.
	DeliveryHeader = "X-Delivery-ID"
	// KeyPrefix prefixes each correlation key the route handler answers.
	KeyPrefix = "webhook:"
)

// EntryConfig is a webhook entry's config. The SDK refuses any other field.
type EntryConfig struct {
	Path            string `json:"path,omitempty" doc:"The path under /webhook/ senders post to (default <scope>/<entry>)."`
	Source          string `json:"source,omitempty" doc:"The source name under webhook/ its Events carry (default <scope>/<entry>)."`
	KeyPointer      string `json:"key_pointer,omitempty" doc:"JSON pointer to the correlation key in the body, e.g. /issue/id: one Work per key (default the delivery ID, one Work per delivery)."`
	DeliveryPointer string `json:"delivery_pointer,omitempty" doc:"JSON pointer to the delivery ID in the body; without it the delivery header is read."`
	DeliveryHeader  string `json:"delivery_header,omitempty" doc:"Header carrying the delivery ID (default X-Delivery-ID)."`
	TitlePointer    string `json:"title_pointer,omitempty" doc:"JSON pointer to the Work's title in the body (default the key)."`
}

// entry is one configured webhook entry.
type entry struct {
	sdk.Entry
	config EntryConfig
	path   string // the full registered path, /webhook/…
	source string // the full source name, webhook/…
}

// registry is the current generation's entries, by path.
type registry struct {
	mu     sync.Mutex
	byPath map[string]entry
}

// Extension builds the webhook extension.
func Extension() *sdk.Extension {
	var reg registry
	x := sdk.New(Name, sdk.Version("0.1.0"), sdk.HostRun(),
		sdk.Title("Webhook"), sdk.Summary("takes signed JSON webhooks in as Events, one standing Work per key"),
		sdk.Certification(Certification)).
		EntryType(Name, sdk.EntryConfig[EntryConfig]()).
		Family(Received, sdk.Loss("a request the daemon did not answer 2xx is lost unless the sender retries it")).
		Schema(Received, 1).
		Configure(reg.configure).
		Validate(validate).
		Webhook(reg.handle).
		Push(push).
		RouteHandler(Name, match, sdk.Samples(samples)).
		WorkKind(sdk.WorkKind{Kind: ItemKind, Standing: true}).
		Render(render)
	p := &x.Manifest.Provides
	for i := range p.Extensions {
		if p.Extensions[i].Type == Name {
			p.Extensions[i].Ingress, p.Extensions[i].Families = true, []string{Received}
		}
	}
	p.Connections = append(p.Connections, protocol.ConnectionType{Type: ConnectionType, Fields: []protocol.Field{
		{Name: SecretName, Secret: true, Required: true, Help: "The shared secret senders sign bodies with (HMAC-SHA256)."},
	}})
	return x
}

// configure registers each entry's path and source; two entries on one
// path are refused, naming both.
func (reg *registry) configure(_ context.Context, _ *sdk.Request, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
	byPath := map[string]entry{}
	var res sdk.ConfigureResult
	for _, en := range p.Entries {
		c, err := sdk.DecodeEntry[EntryConfig](en)
		if err != nil {
			return sdk.ConfigureResult{}, err
		}
		e := entry{Entry: en, config: c, path: "/" + Name + "/" + defaulted(c.Path, en), source: Name + "/" + defaulted(c.Source, en)}
		if other, dup := byPath[e.path]; dup {
			return sdk.ConfigureResult{}, sdk.Errorf(sdk.ErrInvalid,
				"entries %s/%s and %s/%s both take path %s: give one another path", other.Scope, other.Name, en.Scope, en.Name, e.path)
		}
		byPath[e.path] = e
		res.WebhookPaths = append(res.WebhookPaths, e.path)
		res.Sources = append(res.Sources, protocol.Source{Name: e.source, Families: []string{Received}})
	}
	reg.mu.Lock()
	reg.byPath = byPath
	reg.mu.Unlock()
	return res, nil
}

// defaulted is v, or <scope>/<entry>.
func defaulted(v string, en sdk.Entry) string {
	if v != "" {
		return v
	}
	return en.Scope + "/" + en.Name
}

// lookup finds the entry of the longest registered path that is p or a
// parent of p.
func (reg *registry) lookup(p string) (entry, bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var best entry
	found := false
	for reg, e := range reg.byPath {
		if (p == reg || strings.HasPrefix(p, reg+"/")) && len(reg) > len(best.path) {
			best, found = e, true
		}
	}
	return best, found
}

// validate checks what the SDK's strict decoding cannot: pointers that are
// JSON pointers, a path and source that stay beneath the package's own.
func validate(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
	if p.Kind != sdk.ValidateExtension {
		return sdk.ValidateResult{}, nil
	}
	c, err := sdk.DecodeEntry[EntryConfig](sdk.Entry{Scope: p.Scope, Type: p.Type, Name: p.Name, Config: p.Config})
	if err != nil {
		return sdk.ValidateResult{}, err
	}
	for _, f := range []struct{ name, v string }{{"path", c.Path}, {"source", c.Source}} {
		if f.v != "" && (path.Clean(f.v) != f.v || strings.HasPrefix(f.v, "/") || strings.HasPrefix(f.v, "..")) {
			return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid,
				"%s %q is not a clean relative path: write it like acme/issues, without a leading /, . or ..", f.name, f.v)
		}
	}
	for _, f := range []struct{ name, v string }{{"key_pointer", c.KeyPointer}, {"delivery_pointer", c.DeliveryPointer}, {"title_pointer", c.TitlePointer}} {
		if f.v != "" && !strings.HasPrefix(f.v, "/") {
			return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid, "%s %q is not a JSON pointer: start it with /, like /issue/id", f.name, f.v)
		}
	}
	return sdk.ValidateResult{}, nil
}

// fail is an error that names the entry.
func (e entry) fail(format string, args ...any) error {
	return fmt.Errorf("webhook entry %s/%s: %s", e.Scope, e.Name, fmt.Sprintf(format, args...))
}
