package drills

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// boundsBatch is how many puts or emissions one kv.commit of a fill
// carries, so each of its lines stays a few MiB.
const boundsBatch = 100

// boundsEnvelope is what a page's answer may add to its items' budget: the
// result object around them.
const boundsEnvelope = 1 << 10

// TestDrillKVListPagesByBytes fills a namespace with more than a line can
// carry (46 MB of values at full length) and lists it through the real
// daemon: every page stays within the page's byte budget, says more until
// the last, and together they hold every key once, in order; the reading
// extension's connection never breaks.
func TestDrillKVListPagesByBytes(t *testing.T) {
	keys, size := scale(200, 1000), scale(40_000, 46_000)
	e := daemontest.New(t, bins)
	e.Start()
	boundsFill(e, keys, func(batch string) any {
		p := protocol.KVCommitParams{}
		for j := range boundsBatch {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: "probe.big", Key: fmt.Sprintf("k%s-%02d", batch, j), Value: bytes.Repeat([]byte{'v'}, size)})
		}
		return p
	})
	restarts := e.Extension(probe.Name).Restarts

	var (
		seen    []string
		pages   int
		largest int
		after   string
	)
	for {
		a := e.HostCall("", protocol.MethodKVList, protocol.KVListParams{Namespace: "probe.big", After: after})
		if a.Code != "" {
			t.Fatalf("kv.list after %q: %s %s", after, a.Code, a.Message)
		}
		var r protocol.KVListResult
		if err := json.Unmarshal(a.Result, &r); err != nil {
			t.Fatal(err)
		}
		pages++
		largest = max(largest, len(a.Result))
		if len(r.Items) > 1 && len(a.Result) > protocol.MaxPageBytes+boundsEnvelope {
			t.Fatalf("page %d: %d items in %d bytes, over the %d-byte page budget", pages, len(r.Items), len(a.Result), protocol.MaxPageBytes)
		}
		if len(r.Items) == 0 {
			t.Fatalf("page %d after %q is empty although more was said", pages, after)
		}
		for _, it := range r.Items {
			if it.Key <= after || len(it.Value) != size {
				t.Fatalf("page %d: key %q (%d bytes) after %q", pages, it.Key, len(it.Value), after)
			}
			seen = append(seen, it.Key)
			after = it.Key
		}
		if !r.More {
			break
		}
	}
	if len(seen) != keys {
		t.Fatalf("the pages listed %d keys, want %d", len(seen), keys)
	}
	if pages < 2 {
		t.Fatalf("%d bytes of values came back in %d page: the byte budget did not page them", keys*size, pages)
	}
	if got := e.Extension(probe.Name).Restarts; got != restarts {
		t.Fatalf("the probe restarted %d times while listing: its connection broke", got-restarts)
	}
	report(t, "%d keys, %d MB of values, listed in %d pages, the largest answer %d bytes (budget %d), 0 restarts",
		keys, keys*size/1_000_000, pages, largest, protocol.MaxPageBytes)
}

// TestDrillEventLogPagesByBytes fills the log with more than a line can
// carry (31 MB of payloads at full length) and reads it three ways through
// the real daemon: an extension's state.events, the management API's
// /v1/events, and the CLI's events list. Each page stays within the byte
// budget and says there is more; together they hold every Event once; the
// extension's connection never breaks and the CLI reads on to the end.
func TestDrillEventLogPagesByBytes(t *testing.T) {
	events, size := scale(200, 1000), scale(40_000, 31_000)
	e := daemontest.New(t, bins)
	e.Start()
	pad := strings.Repeat("p", size)
	boundsFill(e, events, func(batch string) any {
		p := protocol.KVCommitParams{}
		for j := range boundsBatch {
			p.Emissions = append(p.Emissions, protocol.Emission{
				Scope: "alpha", Source: "probe", DeliveryID: fmt.Sprintf("d%s-%02d", batch, j), Type: "probe.seen",
				Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{"pad":"` + pad + `"}`)},
			})
		}
		return p
	})
	restarts := e.Extension(probe.Name).Restarts

	ext := boundsReadStateEvents(t, e)
	api := boundsReadAPIEvents(t, e)
	cli := boundsReadCLIEvents(t, e)
	for _, r := range []boundsRead{ext, api, cli} {
		if r.events != events {
			t.Errorf("%s read %d Events, want %d", r.who, r.events, events)
		}
		if r.pages < 2 {
			t.Errorf("%s read %d MB of payloads in %d page: the byte budget did not page them", r.who, events*size/1_000_000, r.pages)
		}
	}
	if got := e.Extension(probe.Name).Restarts; got != restarts {
		t.Fatalf("the probe restarted %d times while reading: its connection broke", got-restarts)
	}
	report(t, "%d Events, %d MB of payloads: state.events in %d pages (largest %d bytes), /v1/events in %d, events list in %d; 0 restarts",
		events, events*size/1_000_000, ext.pages, ext.largest, api.pages, cli.pages)
}

// TestDrillOversizedWritesRefusedTooLarge writes what no answer could
// carry: a 12.5 MiB value through the SDK (its base64 alone is over the
// line bound), a value just over the value bound straight to the host, and
// Events whose payloads are over the payload bound, by kv.commit and by
// event.accept. Each is refused too_large with the bound in the message,
// nothing is written, and the writer's connection stays up. A value at the
// bound is stored and read back (the negative control).
func TestDrillOversizedWritesRefusedTooLarge(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	restarts := e.Extension(probe.Name).Restarts
	bound := strconv.Itoa(protocol.MaxValueBytes)

	sdkWrite := boundsWrite(e, probe.Write{Namespace: "probe.big", Key: "sdk", Bytes: 12_500 << 10})
	boundsWantTooLarge(t, "a 12.5 MiB value through the SDK", sdkWrite, bound)

	raw := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{Puts: []protocol.KVPut{
		{Namespace: "probe.big", Key: "raw", Value: bytes.Repeat([]byte{'x'}, protocol.MaxValueBytes+1)},
	}})
	boundsWantTooLarge(t, "a value one byte over the bound, sent to the host", raw, bound)

	pad := jsontext.Value(`{"pad":"` + strings.Repeat("p", protocol.MaxPayloadBytes) + `"}`)
	emit := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{
		Puts: []protocol.KVPut{{Namespace: "probe.big", Key: "with-emission", Value: []byte("x")}},
		Emissions: []protocol.Emission{{Scope: "alpha", Source: "probe", DeliveryID: "huge", Type: "probe.seen",
			Payload: protocol.Payload{Schema: "probe.seen.v1", Data: pad}}},
	})
	boundsWantTooLarge(t, "an emission over the payload bound", emit, strconv.Itoa(protocol.MaxPayloadBytes))

	root := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "root", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	var rootRes protocol.KVCommitResult
	if root.Code != "" || json.Unmarshal(root.Result, &rootRes) != nil || len(rootRes.Emissions) != 1 {
		t.Fatalf("a small emission after the refusals: %+v", root)
	}
	accept := e.HostCall("", protocol.MethodEventAccept, protocol.EventAcceptParams{
		Scope: "alpha", Source: "probe", DeliveryID: "huge-derived", Type: "probe.seen", Parent: rootRes.Emissions[0].EventID,
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: pad},
	})
	boundsWantTooLarge(t, "event.accept over the payload bound", accept, strconv.Itoa(protocol.MaxPayloadBytes))

	for _, key := range []string{"sdk", "raw", "with-emission"} {
		if _, found := e.KVGet("probe.big", key); found {
			t.Errorf("the refused write of %q was stored", key)
		}
	}
	for _, delivery := range []string{"huge", "huge-derived"} {
		id := digest.EmittedEventID("probe", delivery)
		if a := e.HostCall("", protocol.MethodStateEvent, protocol.StateEventParams{ID: id}); a.Code != protocol.CodeNotFound {
			t.Errorf("the refused Event %s is in the log: %+v", delivery, a.Code)
		}
	}

	// The negative control: a value at the bound is stored, read back whole,
	// and listed as a page of its own.
	if a := boundsWrite(e, probe.Write{Namespace: "probe.big", Key: "at-bound", Bytes: protocol.MaxValueBytes}); a.Code != "" {
		t.Fatalf("a value at the bound was refused: %s %s", a.Code, a.Message)
	}
	get := e.HostCall("", protocol.MethodKVGet, protocol.KVGetParams{Namespace: "probe.big", Key: "at-bound"})
	var got protocol.KVGetResult
	if get.Code != "" || json.Unmarshal(get.Result, &got) != nil || len(got.Value) != protocol.MaxValueBytes {
		t.Fatalf("reading the value at the bound: %s %s (%d bytes)", get.Code, get.Message, len(got.Value))
	}
	if len(get.Result) >= protocol.MaxMessageBytes {
		t.Fatalf("the answer of a value at the bound is %d bytes, over the line bound", len(get.Result))
	}
	if got := e.Extension(probe.Name).Restarts; got != restarts {
		t.Fatalf("the probe restarted %d times: an oversized write broke its connection", got-restarts)
	}
	report(t, "12.5 MiB by the SDK, %d+1 bytes to the host, payloads over %d bytes by kv.commit and event.accept: all too_large, nothing written, 0 restarts; a value at the bound reads back in %d bytes",
		protocol.MaxValueBytes, protocol.MaxPayloadBytes, len(get.Result))
}

// boundsFill has the probe commit n items in batches of boundsBatch, each
// batch built by batch from its number.
func boundsFill(e *daemontest.Env, n int, batch func(number string) any) {
	e.T.Helper()
	if n%boundsBatch != 0 {
		e.T.Fatalf("fill %d items: a multiple of %d", n, boundsBatch)
	}
	params, err := json.Marshal(batch("{i}"))
	if err != nil {
		e.T.Fatal(err)
	}
	res := boundsOperation(e, "probe.repeat", probe.Repeat{Method: protocol.MethodKVCommit, Params: string(params), N: n / boundsBatch})
	if res.Code != "" {
		e.T.Fatalf("filling %d items: %s %s", n, res.Code, res.Message)
	}
}

// boundsWrite has the probe write one value through the SDK.
func boundsWrite(e *daemontest.Env, w probe.Write) probe.Answer {
	e.T.Helper()
	res := boundsOperation(e, "probe.write", w)
	if res.Code != "" {
		e.T.Fatalf("probe.write refused %s: %s", res.Code, res.Message)
	}
	var a probe.Answer
	if err := json.Unmarshal(res.Output.Data, &a); err != nil {
		e.T.Fatal(err)
	}
	return a
}

// boundsOperation calls one of the probe's operations as the operator.
func boundsOperation(e *daemontest.Env, op string, input any) client.CallResult {
	e.T.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		e.T.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		e.T.Fatal(err)
	}
	res, err := e.C.Call(context.Background(), probe.Name, client.CallRequest{Operation: op, Input: in})
	if err != nil {
		e.T.Fatalf("%s: %v\n%s", op, err, e.Log)
	}
	return res
}

// boundsWantTooLarge requires a refusal too_large whose message states the
// bound.
func boundsWantTooLarge(t *testing.T, what string, a probe.Answer, bound string) {
	t.Helper()
	if a.Code != protocol.CodeTooLarge || !strings.Contains(a.Message, bound) {
		t.Errorf("%s: answered %q (%s), want %s naming the %s-byte bound", what, a.Code, a.Message, protocol.CodeTooLarge, bound)
	}
}

// boundsRead is what one reader of the log saw.
type boundsRead struct {
	who           string
	events, pages int
	largest       int
	lastSeq       uint64
}

// page checks one page of Events in its encoding (size bytes) and counts it.
func (r *boundsRead) page(t *testing.T, evs []protocol.Event, size int) {
	t.Helper()
	r.pages++
	r.largest = max(r.largest, size)
	if len(evs) > 1 && size > protocol.MaxPageBytes+boundsEnvelope {
		t.Fatalf("%s page %d: %d Events in %d bytes, over the %d-byte page budget", r.who, r.pages, len(evs), size, protocol.MaxPageBytes)
	}
	for _, ev := range evs {
		if ev.Sequence <= r.lastSeq {
			t.Fatalf("%s page %d: sequence %d after %d", r.who, r.pages, ev.Sequence, r.lastSeq)
		}
		r.lastSeq = ev.Sequence
		if ev.Source == "probe" {
			r.events++
		}
	}
}

// boundsReadStateEvents reads the log as the probe does, page by page.
func boundsReadStateEvents(t *testing.T, e *daemontest.Env) boundsRead {
	r := boundsRead{who: "state.events"}
	for {
		a := e.HostCall("", protocol.MethodStateEvents, protocol.StateEventsParams{After: r.lastSeq})
		if a.Code != "" {
			t.Fatalf("state.events after %d: %s %s", r.lastSeq, a.Code, a.Message)
		}
		var res protocol.StateEventsResult
		if err := json.Unmarshal(a.Result, &res); err != nil {
			t.Fatal(err)
		}
		r.page(t, res.Events, len(a.Result))
		if !res.More {
			return r
		}
		if len(res.Events) == 0 {
			t.Fatalf("state.events after %d: an empty page said more", r.lastSeq)
		}
	}
}

// boundsReadAPIEvents reads the log as an operator's client does, on while
// next is below latest.
func boundsReadAPIEvents(t *testing.T, e *daemontest.Env) boundsRead {
	r := boundsRead{who: "/v1/events"}
	for {
		page, err := e.C.Events(context.Background(), client.EventsQuery{After: r.lastSeq, Limit: protocol.StateEventsMax})
		if err != nil {
			t.Fatalf("/v1/events after %d: %v", r.lastSeq, err)
		}
		raw, _ := json.Marshal(page)
		r.page(t, page.Events, len(raw))
		if len(page.Events) == 0 || page.Next >= page.Latest {
			return r
		}
	}
}

// boundsReadCLIEvents reads the log with the CLI, one `events list --json`
// after another, on while next is below latest.
func boundsReadCLIEvents(t *testing.T, e *daemontest.Env) boundsRead {
	r := boundsRead{who: "events list"}
	for {
		cmd := exec.Command(e.Bins.OpenConduit, "events", "list", "--state", e.State, "--json",
			"--limit", strconv.Itoa(protocol.StateEventsMax), "--after", strconv.FormatUint(r.lastSeq, 10))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("events list --after %d: %v", r.lastSeq, err)
		}
		var page client.Events
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatalf("events list --after %d printed what is not a page: %v", r.lastSeq, err)
		}
		raw, _ := json.Marshal(page)
		r.page(t, page.Events, len(raw))
		if len(page.Events) == 0 || page.Next >= page.Latest {
			return r
		}
	}
}
