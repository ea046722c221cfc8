package service_test

import (
	"strconv"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// call has the probe call a host method and returns the host's answer.
func (h *harness) call(t *testing.T, method string, params any) probe.Answer {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var a probe.Answer
	h.op(t, "probe.call", probe.Call{Method: method, Params: raw}, &a)
	return a
}

// boundsHarness is the probe in scope "mine", with "foreign" a scope that
// does not use it, on a store holding events Events of about size bytes in
// each, one after the other, all linked to Work w1.
func boundsHarness(t *testing.T, events, size int) *harness {
	t.Helper()
	db := openDB(t, t.TempDir(), true)
	t.Cleanup(func() { db.Close() })
	pad := jsontext.Value(`"` + strings.Repeat("p", size) + `"`)
	err := db.Update(func(tx *pebblekv.Tx) error {
		for i := range events {
			for _, scope := range []string{"foreign", "mine"} {
				if _, _, err := tx.Accept(pebblekv.EventInput{Scope: scope, Source: "probe", Type: "probe.seen",
					DeliveryID: scope + strconv.Itoa(i), Payload: protocol.Payload{Data: pad}, Works: []string{"w1"}}, pebblekv.Limits{}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Scopes: []config.Scope{{ID: "mine", Entries: []config.Entry{{Name: "p", Type: probe.Name}}}, {ID: "foreign"}}}
	return start(t, db, cfg)
}

// TestStateReadsPageByBytesAndSayMore: state.events and state.work_events
// end a page at the byte budget, say more until the last page, and together
// answer every Event of the extension's scopes once, skipping the other
// scopes' Events, while the extension's connection stays up.
func TestStateReadsPageByBytesAndSayMore(t *testing.T) {
	const events, size = 12, 1 << 20
	h := boundsHarness(t, events, size)
	cases := []struct {
		name, method string
		params       func(after uint64) any
	}{
		{"state.events of every scope", protocol.MethodStateEvents, func(after uint64) any { return protocol.StateEventsParams{After: after} }},
		{"state.events of one scope, 3 a page", protocol.MethodStateEvents, func(after uint64) any {
			return protocol.StateEventsParams{After: after, Scope: "mine", Limit: 3}
		}},
		{"state.work_events", protocol.MethodStateWorkEvents, func(after uint64) any { return protocol.StateWorkEventsParams{ID: "w1", After: after} }},
		{"state.work_events, 3 a page", protocol.MethodStateWorkEvents, func(after uint64) any {
			return protocol.StateWorkEventsParams{ID: "w1", After: after, Limit: 3}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var after uint64
			seen, pages := 0, 0
			for {
				a := h.call(t, tc.method, tc.params(after))
				var res protocol.StateEventsResult
				if a.Code != "" || json.Unmarshal(a.Result, &res) != nil {
					t.Fatalf("page after %d: %s %s", after, a.Code, a.Message)
				}
				pages++
				if len(res.Events) == 0 || len(res.Events) > 1 && len(a.Result) > protocol.MaxPageBytes+1024 {
					t.Fatalf("page %d: %d Events in %d bytes (budget %d)", pages, len(res.Events), len(a.Result), protocol.MaxPageBytes)
				}
				for _, ev := range res.Events {
					if ev.Scope != "mine" || ev.Sequence <= after {
						t.Fatalf("page %d: Event %d of %q after %d", pages, ev.Sequence, ev.Scope, after)
					}
					after = ev.Sequence
					seen++
				}
				if res.Next != after {
					t.Fatalf("page %d: next %d, want the last Event's %d", pages, res.Next, after)
				}
				if !res.More {
					break
				}
			}
			if seen != events || pages < 3 {
				t.Fatalf("%d Events in %d pages, want %d Events in several pages", seen, pages, events)
			}
		})
	}
	if st := h.s.Status(); st.Restarts != 0 {
		t.Fatalf("the probe restarted %d times: an answer broke its connection", st.Restarts)
	}
}

// TestEventAcceptOverItsBoundsIsTooLargeAndWritesNothing: an Event whose
// payload or delivery ID could not fit an answer, or whose records hold a
// value over its bound, is refused too_large; nothing of it is written; a
// good Event is accepted after, on the same connection.
func TestEventAcceptOverItsBoundsIsTooLargeAndWritesNothing(t *testing.T) {
	h := boundsHarness(t, 1, 10)
	parent := digest.EmittedEventID("probe", "mine0")
	accept := func(delivery string, f func(p *protocol.EventAcceptParams)) protocol.EventAcceptParams {
		p := protocol.EventAcceptParams{Scope: "mine", Source: "probe", DeliveryID: delivery, Type: "probe.seen", Parent: parent,
			Payload: protocol.Payload{Data: jsontext.Value(`{}`)},
			Records: &protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe", Key: delivery, Value: []byte("r")}}}}
		f(&p)
		return p
	}
	cases := []struct {
		name string
		p    protocol.EventAcceptParams
		code string
	}{
		{"a payload over its bound", accept("big-payload", func(p *protocol.EventAcceptParams) {
			p.Payload.Data = jsontext.Value(`"` + strings.Repeat("p", protocol.MaxPayloadBytes) + `"`)
		}), protocol.CodeTooLarge},
		{"a delivery ID over its bound", accept(strings.Repeat("d", protocol.MaxKeyBytes+1), func(*protocol.EventAcceptParams) {}), protocol.CodeTooLarge},
		{"a record over the value bound", accept("big-record", func(p *protocol.EventAcceptParams) {
			p.Records.Puts[0].Value = make([]byte, protocol.MaxValueBytes+1)
		}), protocol.CodeTooLarge},
		{"a good Event", accept("good", func(*protocol.EventAcceptParams) {}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := h.call(t, protocol.MethodEventAccept, tc.p)
			if a.Code != tc.code {
				t.Fatalf("answered %q (%s), want %q", a.Code, a.Message, tc.code)
			}
			ev := h.call(t, protocol.MethodStateEvent, protocol.StateEventParams{ID: digest.EmittedEventID(tc.p.Source, tc.p.DeliveryID)})
			rec := h.call(t, protocol.MethodKVGet, protocol.KVGetParams{Namespace: "probe", Key: tc.p.Records.Puts[0].Key})
			written := ev.Code == "" || strings.Contains(string(rec.Result), `"found":true`)
			if written != (tc.code == "") {
				t.Fatalf("written %v (state.event %q, kv.get %s), want %v", written, ev.Code, rec.Result, tc.code == "")
			}
		})
	}
	if st := h.s.Status(); st.Restarts != 0 {
		t.Fatalf("the probe restarted %d times: a refusal broke its connection", st.Restarts)
	}
}
