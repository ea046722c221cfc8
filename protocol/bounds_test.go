package protocol

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// lineLen is v's length on a line: its JSON, with U+2028 and U+2029 in the
// six-byte escapes the transport writes them as.
func lineLen(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		t.Fatal(err)
	}
	return len(b) + 3*(bytes.Count(b, lineSep)+bytes.Count(b, paraSep))
}

// worstKey is a name of n bytes that escapes to the most bytes a line can
// carry it in: six for every byte.
func worstKey(n int) string { return strings.Repeat("\x01", n) }

// TestCheckBoundsRefusesWhatNoAnswerCouldCarry: every part of a batch over
// its bound is too_large, the message names the bound and never quotes the
// oversized part; parts at their bounds pass.
func TestCheckBoundsRefusesWhatNoAnswerCouldCarry(t *testing.T) {
	big := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	longKey := strings.Repeat("K", MaxKeyBytes+1)
	payload := func(n int) Payload { return Payload{Data: jsontext.Value(`"` + strings.Repeat("p", n-2) + `"`)} }
	seps := strings.Repeat("\u2028", (MaxPayloadBytes-2)/3)
	emission := func(f func(e *Emission)) []Emission {
		e := goodEmission("d")
		f(&e)
		return []Emission{goodEmission("ok"), e}
	}
	cases := []struct {
		name  string
		p     KVCommitParams
		bound int
	}{
		{"every part at its bound", KVCommitParams{
			Puts: []KVPut{{Namespace: "acme", Key: strings.Repeat("k", MaxKeyBytes), Value: big(MaxValueBytes)}},
			Emissions: emission(func(e *Emission) {
				e.DeliveryID, e.Payload = strings.Repeat("d", MaxKeyBytes), payload(MaxPayloadBytes)
			}),
		}, 0},
		{"a value one byte over", KVCommitParams{Puts: []KVPut{{Namespace: "acme", Key: "k", Value: big(MaxValueBytes + 1)}}}, MaxValueBytes},
		{"a put's key over", KVCommitParams{Puts: []KVPut{{Namespace: "acme", Key: longKey}}}, MaxKeyBytes},
		{"a check's key over", KVCommitParams{Checks: []KVCheck{{Namespace: "acme", Key: longKey, Absent: true}}}, MaxKeyBytes},
		{"a delete's namespace over", KVCommitParams{Deletes: []KVDelete{{Namespace: longKey, Key: "k"}}}, MaxKeyBytes},
		{"a payload one byte over", KVCommitParams{Emissions: emission(func(e *Emission) { e.Payload = payload(MaxPayloadBytes + 1) })}, MaxPayloadBytes},
		{"a payload over only as a line carries it", KVCommitParams{Emissions: emission(func(e *Emission) {
			e.Payload = Payload{Data: jsontext.Value(`"` + seps + `"`)}
		})}, MaxPayloadBytes},
		{"a delivery ID over", KVCommitParams{Emissions: emission(func(e *Emission) { e.DeliveryID = longKey })}, MaxKeyBytes},
		{"a parent over", KVCommitParams{Emissions: emission(func(e *Emission) { e.Parent = longKey })}, MaxKeyBytes},
		{"a scope over", KVCommitParams{Emissions: emission(func(e *Emission) { e.Scope = longKey })}, MaxKeyBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBounds(tc.p)
			if tc.bound == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if CodeOf(err) != CodeTooLarge {
				t.Fatalf("answered %v, want too_large", err)
			}
			if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(tc.bound)) || strings.Contains(msg, longKey[:64]) || len(msg) > 400 {
				t.Errorf("message %q: want the %d-byte bound named and nothing oversized quoted", msg, tc.bound)
			}
		})
	}
}

// TestKVRulesRefuseOversizeBeforeAnyOtherRule: a host's rules refuse an
// oversized part first, so no other refusal quotes it, and event.accept's
// Event is judged by the same bounds.
func TestKVRulesRefuseOversizeBeforeAnyOtherRule(t *testing.T) {
	host := HostKVRules(rulesManifest(), func(s string) bool { return s == "s1" })
	foreign := strings.Repeat("o", MaxKeyBytes+1)
	cases := []struct {
		name string
		err  error
		want *Error
	}{
		{"an oversized put beside an unconfigured scope", host.Check(KVCommitParams{
			Emissions: []Emission{{Scope: "s9", Source: "acme", DeliveryID: "d", Type: "acme.seen"}},
			Puts:      []KVPut{{Namespace: "acme", Key: "k", Value: make([]byte, MaxValueBytes+1)}},
		}), ErrTooLarge},
		{"an oversized foreign namespace", host.Check(KVCommitParams{Puts: []KVPut{{Namespace: foreign, Key: "k"}}}), ErrTooLarge},
		{"an accepted Event's payload over", host.CheckEmission(Emission{Scope: "s1", Source: "acme", DeliveryID: "d", Type: "acme.seen",
			Payload: Payload{Data: jsontext.Value(`"` + strings.Repeat("p", MaxPayloadBytes) + `"`)}}), ErrTooLarge},
		{"an accepted Event's delivery ID over", host.CheckEmission(Emission{Scope: "s1", Source: "acme", DeliveryID: foreign, Type: "acme.seen"}), ErrTooLarge},
		{"a good accepted Event", host.CheckEmission(goodEmission("d")), nil},
		{"a foreign namespace within the bound", host.Check(KVCommitParams{Puts: []KVPut{{Namespace: "other", Key: "k"}}}), ErrUnauthorized},
	}
	for _, tc := range cases {
		if tc.want == nil && tc.err != nil || tc.want != nil && CodeOf(tc.err) != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

// TestItemSizesCoverTheirEncoding: what a page counts an item as is never
// less than the bytes its answer's line carries, whatever its strings hold.
func TestItemSizesCoverTheirEncoding(t *testing.T) {
	strs := []string{"", "plain", `q"uote\back`, "ctl\x00\x01\n\t", "sep\u2028\u2029", "bad\xff\xfe", "é漢字🙂", worstKey(100)}
	for _, s := range strs {
		for _, n := range []int{0, 1, 2, 3, 1000} {
			item := KVItem{Key: s, Value: make([]byte, n), Version: strings.Repeat("f", 32)}
			if got, want := KVItemSize(s, n), lineLen(t, item)+1; got < want {
				t.Errorf("KVItemSize(%q, %d) = %d, under its encoding's %d", s, n, got, want)
			}
		}
		data, err := json.Marshal(map[string]string{"t": s + "\u2028"}, jsontext.AllowInvalidUTF8(true))
		if err != nil {
			t.Fatal(err)
		}
		e := Event{ID: "ev_" + s, Sequence: 1<<64 - 1, Scope: s, Source: s, Type: s, DeliveryID: s, Parent: s, Root: s, Depth: 1 << 40,
			Time:    time.Date(2024, 6, 3, 16, 0, 0, 123456789, time.FixedZone("x", 3600)),
			Payload: Payload{Schema: s, Data: data}, Works: []string{s, s}}
		if got, want := e.WireSize(), lineLen(t, e)+1; got < want {
			t.Errorf("WireSize of an Event of %q = %d, under its encoding's %d", s, got, want)
		}
	}
}

// TestLargestItemsAnswerWellUnderTheLineBound: an item at every bound, its
// names escaping to the most bytes they can, still answers in a line well
// under MaxMessageBytes, alone and as a page of one.
func TestLargestItemsAnswerWellUnderTheLineBound(t *testing.T) {
	key := worstKey(MaxKeyBytes)
	value := make([]byte, MaxValueBytes)
	item := KVItem{Key: key, Value: value, Version: strings.Repeat("f", 32)}
	data := jsontext.Value(`"` + strings.Repeat("\u2028", (MaxPayloadBytes-2)/6) + `"`)
	ev := Event{ID: "ev_" + strings.Repeat("0", 32), Scope: key, Source: key, Type: key, DeliveryID: key, Parent: key, Root: key,
		Payload: Payload{Data: data}}
	if PayloadSize(ev.Payload) > MaxPayloadBytes {
		t.Fatalf("the test's payload is %d bytes, over its bound", PayloadSize(ev.Payload))
	}
	answers := map[string]any{
		"kv.get":       KVGetResult{Found: true, Value: value, Version: item.Version},
		"kv.list":      KVListResult{Items: []KVItem{item}, More: true},
		"state.event":  ev,
		"state.events": StateEventsResult{Events: []Event{ev}, Next: 1, More: true},
	}
	for method, a := range answers {
		if n := lineLen(t, a); n > MaxMessageBytes-4<<20 {
			t.Errorf("%s at every bound answers %d bytes, within 4 MiB of the %d-byte line bound", method, n, MaxMessageBytes)
		}
	}
}

// TestPageBudgetTakesOneItemAlwaysThenStopsAtCountOrBytes is the paging
// rule every list follows.
func TestPageBudgetTakesOneItemAlwaysThenStopsAtCountOrBytes(t *testing.T) {
	cases := []struct {
		name  string
		limit int
		sizes []int
		taken int
	}{
		{"a first item over the budget is taken alone", 10, []int{MaxPageBytes * 2, 1}, 1},
		{"items up to the budget exactly", 10, []int{MaxPageBytes / 2, MaxPageBytes / 2, 1}, 2},
		{"the count", 2, []int{1, 1, 1}, 2},
		{"no limit means the maximum", 0, []int{1, 1, 1, 1}, 3},
		{"a limit over the maximum means the maximum", 9, []int{1, 1, 1, 1}, 3},
	}
	for _, tc := range cases {
		p := NewPageBudget(tc.limit, 3)
		taken := 0
		for _, s := range tc.sizes {
			if !p.Add(s) {
				break
			}
			taken++
		}
		if taken != tc.taken {
			t.Errorf("%s: took %d items, want %d", tc.name, taken, tc.taken)
		}
		if full := p.Full(); full != (taken == p.Limit()) {
			t.Errorf("%s: Full() = %v with %d of %d items", tc.name, full, taken, p.Limit())
		}
	}
}
