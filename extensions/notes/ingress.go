package notes

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Bounds of a note.
const (
	// MaxText is the most bytes a note's text may hold.
	MaxText = 4 << 10
	// MaxID bounds a note's id, MaxThread a thread's name, in bytes.
	MaxID     = 128
	MaxThread = 100
)

// Note is one note as a sender posts it and as the notes.added Event
// carries it.
type Note struct {
	ID     string `json:"id"`
	Thread string `json:"thread"`
	Text   string `json:"text,omitempty"`
}

// delivered is a delivery's payload, from webhook.handle to ingress.push:
// the note and the scope it is for.
type delivered struct {
	Scope string `json:"scope_id"`
	Note
}

// strict reads a posted body: exact names, nothing unknown.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// handle answers one request under an entry's path: 401 when the entry
// has a token and the request does not carry it, 400 for a body that is
// not one note, else 202 with one delivery whose ID is the note's. A
// refusal carries no delivery, so nothing is accepted.
func (reg *registry) handle(ctx context.Context, r *sdk.Request, p sdk.WebhookHandleParams) (sdk.WebhookHandleResult, error) {
	e, ok := reg.lookup(p.Path)
	if !ok {
		return sdk.WebhookHandleResult{Status: http.StatusNotFound}, nil
	}
	token, err := e.token(ctx, r.Host)
	if err != nil {
		return sdk.WebhookHandleResult{}, err
	}
	if token != nil && !bearer(*token, header(p.Headers, "Authorization")) {
		return sdk.WebhookHandleResult{Status: http.StatusUnauthorized}, nil
	}
	if p.Method != http.MethodPost {
		return sdk.WebhookHandleResult{Status: http.StatusMethodNotAllowed}, nil
	}
	var n Note
	if err := json.Unmarshal(p.Body, &n, strict); err != nil || checkNote(n) != nil {
		return sdk.WebhookHandleResult{Status: http.StatusBadRequest}, nil
	}
	data, err := json.Marshal(delivered{Scope: e.Scope, Note: n})
	if err != nil {
		return sdk.WebhookHandleResult{}, err
	}
	return sdk.WebhookHandleResult{Status: http.StatusAccepted, Deliveries: []sdk.Delivery{{
		Source: e.source, DeliveryID: n.ID, Payload: sdk.Payload{Data: data},
	}}}, nil
}

// token is the bearer token the entry's requests must carry: its
// connection's token when it names one, else the scope's secret token when
// the entry selects it; nil when it does neither, so requests need none. A
// token it names but the host will not resolve is "", which no request
// carries, so every request is refused rather than let in.
func (e entry) token(ctx context.Context, h *sdk.Host) (*string, error) {
	var res protocol.SecretResolveResult
	err := h.Call(ctx, protocol.MethodSecretResolve,
		protocol.SecretResolveParams{Scope: e.Scope, Connection: e.Connection, Names: []string{TokenSecret}}, &res)
	none := ""
	switch code := protocol.CodeOf(err); {
	case err == nil:
		t := res.Secrets[TokenSecret]
		return &t, nil
	case code == protocol.CodeUnauthorized && e.Connection == "":
		// The entry selects no secret named token: the path is open.
		return nil, nil
	case code == protocol.CodeUnauthorized || code == protocol.CodeNotFound:
		return &none, nil
	}
	return nil, fmt.Errorf("notes entry %s/%s: resolving its token: %w", e.Scope, e.Name, err)
}

// bearer reports whether auth is "Bearer <token>" for a non-empty token,
// compared in constant time (over digests, so the lengths stay hidden).
func bearer(token, auth string) bool {
	got, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
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

// checkNote refuses a note without an id or thread, with a name that
// cannot be a key, or with a text over MaxText.
func checkNote(n Note) error {
	if err := checkName("id", n.ID, MaxID); err != nil {
		return err
	}
	if err := checkThread(n.Thread); err != nil {
		return err
	}
	return checkText(n.Text)
}

// checkThread refuses a thread name that is empty, too long, or holds a
// '/' or a control character: it is part of a KV key and a Work's key.
func checkThread(thread string) error { return checkName("thread", thread, MaxThread) }

func checkName(what, v string, max int) error {
	switch {
	case v == "":
		return sdk.Errorf(sdk.ErrInvalid, "the note has no %s: give it one", what)
	case len(v) > max:
		return sdk.Errorf(sdk.ErrInvalid, "the note's %s is %d bytes: keep it within %d", what, len(v), max)
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '/' }):
		return sdk.Errorf(sdk.ErrInvalid, "the note's %s holds a '/' or a control character: use letters, digits and punctuation other than '/'", what)
	}
	return nil
}

func checkText(text string) error {
	if len(text) > MaxText {
		return sdk.Errorf(sdk.ErrInvalid, "the note's text is %d bytes: keep it within %d", len(text), MaxText)
	}
	return nil
}

// push turns a delivery into its one notes.added Event, in the entry's
// scope.
func push(_ context.Context, _ *sdk.Request, d sdk.Delivery) ([]sdk.EventDraft, error) {
	var in delivered
	if err := json.Unmarshal(d.Payload.Data, &in); err != nil || in.Scope == "" || checkNote(in.Note) != nil {
		return nil, sdk.Errorf(sdk.ErrInvalid, "delivery %q is not one the notes webhook made: its payload names no scope and note", d.DeliveryID)
	}
	data, err := json.Marshal(in.Note)
	if err != nil {
		return nil, err
	}
	return []sdk.EventDraft{{Scope: in.Scope, Type: Added, Payload: sdk.Payload{Schema: AddedSchema, Data: data}}}, nil
}
