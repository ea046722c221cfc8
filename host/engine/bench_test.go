package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// The engine's benchmarks run the real webhook package in this process,
// served over real pipes by the SDK's harness (its host callbacks answered
// by the in-memory host), against the engine on a real Pebble store whose
// every commit is synced, with the webhook listener on loopback.

// benchSecret signs the benchmarks' requests.
const benchSecret = "bench-5f1c"

// benchConfig is scope acme with the webhook entry issues and the webhook
// route.
const benchConfig = `{"scopes":[{"id":"acme",
  "entries":[{"name":"issues","type":"webhook","config":{"key_pointer":"/issue/id","title_pointer":"/issue/title"}}],
  "routes":[{"handler":"webhook"}]}]}`

// harnessPackages is the one running package, the webhook package served
// by h, as the engine sees it.
type harnessPackages struct {
	h *sdktest.Harness
	m *protocol.Manifest
}

func (p harnessPackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if pkg != p.m.Name {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	return p.h.Raw(ctx, method, params, result)
}

func (p harnessPackages) Manifest(pkg string) (*protocol.Manifest, bool) {
	return p.m, pkg == p.m.Name
}

func (p harnessPackages) RouteHandlerOwner(handler string) string {
	if slices.ContainsFunc(p.m.Provides.Routes, func(r protocol.Route) bool { return r.Handler == handler }) {
		return p.m.Name
	}
	return ""
}

func (p harnessPackages) WorkKindOwner(kind string) (string, protocol.WorkKind) {
	for _, k := range p.m.Provides.WorkKinds {
		if k.Kind == kind {
			return p.m.Name, k
		}
	}
	return "", protocol.WorkKind{}
}

func (p harnessPackages) RecurrenceOwner(string) string { return "" }

// benchRig is the engine routing for the webhook package.
type benchRig struct {
	db   *pebblekv.DB
	e    *Engine
	pkgs harnessPackages
	base string
}

func newBenchRig(b *testing.B) *benchRig {
	b.Helper()
	h, err := sdktest.Start(webhook.Extension(),
		sdktest.WithEntries(sdk.Entry{Scope: "acme", Type: webhook.Name, Name: "issues",
			Config: jsontext.Value(`{"key_pointer":"/issue/id","title_pointer":"/issue/title"}`)}),
		sdktest.WithSecrets("acme", map[string]string{webhook.SecretName: benchSecret}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	db, err := pebblekv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	cfg, err := config.Parse([]byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	gen := &config.Generation{ID: 1, Config: cfg}
	r := &benchRig{db: db, pkgs: harnessPackages{h: h, m: webhook.Extension().Manifest}}
	r.e = New(Deps{DB: db, Packages: r.pkgs, Generation: func() *config.Generation { return gen }})
	r.e.SetWebhookRoutes(routes{"/webhook/acme/issues": webhook.Name})
	addr, err := r.e.ListenWebhooks(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	r.base = "http://" + addr.String()
	r.e.Start(context.Background())
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.e.Stop(ctx)
	})
	return r
}

// post sends delivery n, signed, keyed n, and wants its 202.
func (r *benchRig) post(c *http.Client, n int) error {
	body := fmt.Appendf(nil, `{"issue":{"id":%d,"title":"issue %d"}}`, n, n)
	req, err := http.NewRequest(http.MethodPost, r.base+"/webhook/acme/issues", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(benchSecret, body))
	req.Header.Set(webhook.DeliveryHeader, fmt.Sprintf("d%d", n))
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("delivery %d: status %d, want 202", n, res.StatusCode)
	}
	return nil
}

// routedAll reports whether the router has routed every accepted Event:
// its cursor at the log's end and nothing pending.
func (r *benchRig) routedAll() (bool, error) {
	var done bool
	err := r.db.View(func(rd *pebblekv.Reader) error {
		latest, err := rd.LatestSequence()
		if err != nil {
			return err
		}
		cursor, err := rd.RouteCursor()
		if err != nil {
			return err
		}
		pending, err := rd.PendingScopes()
		done = cursor >= latest && len(pending) == 0
		return err
	})
	return done, err
}

// waitRouted waits until every accepted Event is routed.
func (r *benchRig) waitRouted(b *testing.B) {
	b.Helper()
	waitEngine(b, r.e, "the accepted webhooks all routed", r.routedAll)
}

// waitEngine waits until done holds, asking again at each of the engine's
// changes (or every 5 ms), for at most waitFor.
func waitEngine(b *testing.B, e *Engine, what string, done func() (bool, error)) {
	b.Helper()
	end := time.Now().Add(waitFor)
	for {
		changed := e.Changes()
		ok, err := done()
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			b.Fatalf("waited %s for %s", waitFor, what)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// senders is how many requests are in flight at once.
const senders = 8

// benchRounds is how many rounds each run is cut into; the figures are
// the rounds' medians.
const benchRounds = 5

// BenchmarkWebhookAcceptedAndRouted posts signed webhooks (each a new key,
// so each creates its Work) from 8 senders and waits until every one is
// answered 202 (accepted, synced) and routed. webhooks/s is the median of
// five rounds' throughput; p50-202-ms the median time to a 202.
func BenchmarkWebhookAcceptedAndRouted(b *testing.B) {
	r := newBenchRig(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	var next atomic.Int64
	var rates []float64
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for round := range benchRounds {
		n := b.N / benchRounds
		if round < b.N%benchRounds {
			n++
		}
		if n == 0 {
			continue
		}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		var left atomic.Int64
		left.Store(int64(n))
		for range min(senders, n) {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					t0 := time.Now()
					if err := r.post(c, int(next.Add(1))); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		r.waitRouted(b)
		rates = append(rates, float64(n)/time.Since(start).Seconds())
	}
	b.StopTimer()
	b.ReportMetric(median(rates), "webhooks/s")
	b.ReportMetric(float64(medianDuration(lat).Microseconds())/1000, "p50-202-ms")
}

// BenchmarkRouteMatchRoundTrip asks the webhook package's route handler
// about an Event, as the router does (engine → package → engine over the
// pipes), one call at a time; p50-µs is the median call.
func BenchmarkRouteMatchRoundTrip(b *testing.B) {
	r := newBenchRig(b)
	g := r.e.d.Generation()
	sc, ok := scopeOf(g, "acme")
	if !ok {
		b.Fatal("no scope acme")
	}
	ev := protocol.Event{ID: "e1", Scope: "acme", Source: "webhook/acme/issues", Type: webhook.Received, DeliveryID: "d1",
		Payload: protocol.Payload{Schema: webhook.ReceivedSchema, Data: jsontext.Value(`{"key":"136","title":"The export fails","body":{}}`)}}
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, _, err := r.e.ask(ctx, "acme", 0, sc.Routes[0], ev, nil)
		lat = append(lat, time.Since(t0))
		if err != nil || !res.Match {
			b.Fatalf("route.match: %+v %v", res, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(medianDuration(lat).Nanoseconds())/1000, "p50-µs")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianDuration(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
