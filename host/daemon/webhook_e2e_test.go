package daemon_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// hookSecret signs the webhook entry's requests; serve reads it from
// OC_TEST_HOOK through the connection's secret reference.
const hookSecret = "hook-3d9a61"

// webhookConfig is one scope acme with a webhook entry on the connection
// hooks, keyed and titled from the body, and the webhook route.
const webhookConfig = `{
  "scopes": [{
    "id": "acme",
    "entries": [{"name": "issues", "type": "webhook", "connection": "hooks",
                 "config": {"key_pointer": "/issue/id", "title_pointer": "/issue/title"}}],
    "routes": [{"handler": "webhook"}],
    "connections": ["hooks"]
  }],
  "connections": [{"name": "hooks", "type": "webhook-signing", "secret_refs": {"secret": "env:OC_TEST_HOOK"}}]
}`

// startWebhooks runs serve on webhookConfig and returns the webhook
// listener's base URL.
func startWebhooks(t *testing.T) (*daemontest.Env, string) {
	t.Helper()
	e := daemontest.New(t, bins)
	e.WriteConfig(webhookConfig)
	e.Launch("", []string{"OC_TEST_HOOK=" + hookSecret}, "--config", e.Config)
	var st client.Status
	e.Eventually("the daemon running with its webhook listener", func() bool {
		var err error
		st, err = e.C.Status(context.Background())
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning && st.Webhooks != ""
	})
	if !strings.HasPrefix(st.Webhooks, "127.0.0.1:") {
		t.Fatalf("the webhook listener is on %s; by default it listens on loopback", st.Webhooks)
	}
	if x := e.Extension(webhook.Name); x.State != "running" {
		t.Fatalf("the webhook package is %s, want running\n%s", x.State, e.Log)
	}
	return e, "http://" + st.Webhooks
}

// postHook posts body to the acme/issues entry's path with a signature and
// a delivery ID, and returns the status.
func postHook(t *testing.T, base, body, sig, delivery string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/webhook/acme/issues", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set(webhook.SignatureHeader, sig)
	}
	req.Header.Set(webhook.DeliveryHeader, delivery)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("posting delivery %s: %v", delivery, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// hookEvents is every webhook.received Event in acme.
func hookEvents(t *testing.T, e *daemontest.Env) []protocol.Event {
	t.Helper()
	page, err := e.C.Events(context.Background(), client.EventsQuery{Scope: "acme", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Event
	for _, ev := range page.Events {
		if ev.Type == webhook.Received {
			out = append(out, ev)
		}
	}
	return out
}

func TestRealBinarySignedWebhookMakesWorkOnceAndABadSignatureNothing(t *testing.T) {
	e, base := startWebhooks(t)
	body := `{"issue":{"id":136,"title":"The export fails"}}`
	sig := webhook.Sign(hookSecret, []byte(body))

	// A bad signature first: 401, nothing accepted.
	for _, tc := range []struct{ name, sig string }{
		{"no signature", ""},
		{"another secret's signature", webhook.Sign("not-the-secret", []byte(body))},
		{"another body's signature", webhook.Sign(hookSecret, []byte(body+"\n"))},
	} {
		if got := postHook(t, base, body, tc.sig, "d-1"); got != http.StatusUnauthorized {
			t.Fatalf("%s: status %d, want 401", tc.name, got)
		}
	}
	if evs := hookEvents(t, e); len(evs) != 0 {
		t.Fatalf("refused requests accepted Events: %+v", evs)
	}

	// The signed request: 202, and its Event is there when the answer is.
	if got := postHook(t, base, body, sig, "d-1"); got != http.StatusAccepted {
		t.Fatalf("a signed request: status %d, want 202\n%s", got, e.Log)
	}
	evs := hookEvents(t, e)
	if len(evs) != 1 || evs[0].Source != "webhook/acme/issues" || evs[0].DeliveryID != "d-1" ||
		!strings.Contains(string(evs[0].Payload.Data), `"key":"136"`) {
		t.Fatalf("after the 202: %+v", evs)
	}

	// A replay is answered 2xx and accepted once; a new delivery is new.
	if got := postHook(t, base, body, sig, "d-1"); got != http.StatusAccepted {
		t.Fatalf("the replay: status %d, want 202", got)
	}
	if got := postHook(t, base, body, sig, "d-2"); got != http.StatusAccepted {
		t.Fatalf("a second delivery: status %d, want 202", got)
	}
	if evs := hookEvents(t, e); len(evs) != 2 {
		t.Fatalf("after a replay and a second delivery the log holds %d webhook Events, want 2", len(evs))
	}

	// The route made one standing Work for key 136, titled from the body,
	// and the second delivery of that key joined it.
	var works client.WorkList
	e.Eventually("both deliveries routed to one Work", func() bool {
		var err error
		works, err = e.C.Works(context.Background(), client.WorkQuery{Scope: "acme"})
		return err == nil && len(works.Work) == 1 && len(works.Work[0].Inputs) == 2
	})
	w := works.Work[0]
	if w.Kind != webhook.ItemKind || w.Display == nil || w.Display.Title != "The export fails" ||
		strings.Join(w.Keys, ",") != webhook.KeyPrefix+"136" {
		t.Fatalf("the webhook Work: %+v", w)
	}

	// A path nobody registered.
	res, err := http.Post(base+"/webhook/acme/other", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("an unregistered path: status %d, want 404", res.StatusCode)
	}
	if strings.Contains(e.Log.String(), hookSecret) {
		t.Fatal("the daemon's log holds the webhook secret")
	}
}
