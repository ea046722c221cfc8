package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// webhookDeadline bounds webhook.handle, and each ingress.push.
const webhookDeadline = protocol.WebhookHandleDeadlineMillis * time.Millisecond

// WebhookHandler is the webhook listener's handler: it finds the package
// that registered the request's path (the longest registered path that is
// the request's or one of its parents), asks it with webhook.handle, has it
// push each delivery, and accepts every drafted Event in one synced
// transaction before it answers the package's 2xx. Any failure on the way
// answers 502 or 503 with nothing accepted, so the sender retries; a
// delivery whose item and version were bound before to another envelope is
// 409, refused the same way however often it comes.
func (e *Engine) WebhookHandler() http.Handler { return http.HandlerFunc(e.ingress.serveHTTP) }

func (i *ingress) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	pkg := ""
	if routes := i.webhookRoutes(); routes != nil {
		pkg = ownerOf(routes.WebhookPaths(), p)
	}
	if pkg == "" {
		http.Error(w, "no webhook is registered at this path", http.StatusNotFound)
		return
	}
	if r.ContentLength > protocol.MaxWebhookBodyBytes {
		http.Error(w, "the body is over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, protocol.MaxWebhookBodyBytes))
	if err != nil {
		if _, over := errors.AsType[*http.MaxBytesError](err); over {
			http.Error(w, "the body is over 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "the body could not be read", http.StatusBadRequest)
		return
	}
	status, results, err := i.handle(r.Context(), pkg, protocol.WebhookHandleParams{
		Path: p, Method: r.Method, Headers: r.Header, Body: body, Received: i.e.d.Clock.Now(),
	})
	if err != nil {
		i.e.d.Logger.Warn("a webhook request was not accepted", "package", pkg, "path", p, "code", protocol.CodeOf(err), "err", err)
		code := http.StatusBadGateway
		switch {
		case isBindingConflict(err):
			code = http.StatusConflict
		case retryable(err):
			code = http.StatusServiceUnavailable
		}
		http.Error(w, fmt.Sprintf("nothing was accepted (%s); retry later", protocol.CodeOf(err)), code)
		return
	}
	if status < 200 || status > 299 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.MarshalWrite(w, struct {
		Events []protocol.EmissionResult `json:"events"`
	}{Events: results})
}

// handle runs one request through its package: webhook.handle, then, for a
// 2xx, each delivery's ingress.push and the acceptance. It returns the
// status to answer and the accepted Events.
func (i *ingress) handle(ctx context.Context, pkg string, req protocol.WebhookHandleParams) (int, []protocol.EmissionResult, error) {
	hctx, cancel := context.WithTimeout(ctx, webhookDeadline)
	defer cancel()
	var res protocol.WebhookHandleResult
	if err := i.e.d.Packages.Call(hctx, pkg, protocol.MethodWebhookHandle, req, &res); err != nil {
		return 0, nil, fmt.Errorf("webhook.handle on %s: %w", pkg, err)
	}
	if res.Status < 200 || res.Status > 599 {
		return 0, nil, protocol.Errorf(protocol.ErrInvalid, "%s answered webhook.handle with status %d; answer 200–599", pkg, res.Status)
	}
	if res.Status > 299 {
		return res.Status, nil, nil
	}
	results, err := i.take(ctx, pkg, res.Deliveries)
	if err != nil {
		return 0, nil, err
	}
	return res.Status, results, nil
}

// ownerOf is the package of the longest registered path that is p or a
// parent of p ("" for none).
func ownerOf(paths map[string]string, p string) string {
	owner, best := "", -1
	for reg, pkg := range paths {
		root := strings.TrimSuffix(reg, "/")
		if (p == reg || p == root || strings.HasPrefix(p, root+"/")) && len(root) > best {
			owner, best = pkg, len(root)
		}
	}
	return owner
}

// retryable says the failure is the host's or the package's being away
// (503), not a wrong answer (502).
func retryable(err error) bool {
	switch protocol.CodeOf(err) {
	case protocol.CodeUnavailable, protocol.CodeOverloaded, protocol.CodeStorageFull,
		protocol.CodeRetryAfter, protocol.CodeShuttingDown, protocol.CodeTransport:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}
