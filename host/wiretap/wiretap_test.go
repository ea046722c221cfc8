package wiretap

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

// clock is a test clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func call(id int, method string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":%q,"id":%d,"params":{}}`, method, id)
}

func result(id int, res string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":%s}`, id, res)
}

func TestRingDropsOldestByCountAndSequenceContinues(t *testing.T) {
	r := New(Options{MaxEntries: 4})
	for i := 1; i <= 10; i++ {
		r.Observe(true, call(i, "operation.call"))
	}
	p := r.Page(0, 0)
	if len(p.Entries) != 4 || p.Oldest != 7 || p.Entries[0].Seq != 7 || p.Next != 10 || p.More {
		t.Fatalf("page = %d entries, oldest %d, first %d, next %d, more %v; want the 4 newest, 7..10",
			len(p.Entries), p.Oldest, p.Entries[0].Seq, p.Next, p.More)
	}
	r.Observe(true, call(11, "operation.call"))
	if p := r.Page(10, 0); len(p.Entries) != 1 || p.Entries[0].Seq != 11 || p.Latest != 11 {
		t.Fatalf("after 10: %+v, latest %d; want only seq 11, latest 11", p.Entries, p.Latest)
	}
	// A cursor past the tap's numbering (a reader of an earlier daemon)
	// reads nothing, and Latest says why.
	if p := r.Page(500, 0); len(p.Entries) != 0 || p.Latest != 11 {
		t.Fatalf("after 500: %+v, latest %d; want none, latest 11", p.Entries, p.Latest)
	}
	if p := New(Options{}).Page(0, 0); p.Latest != 0 {
		t.Fatalf("an empty tap's latest is %d, want 0", p.Latest)
	}
}

func TestRingDropsOldestByBytes(t *testing.T) {
	big := `"` + strings.Repeat("x", 3000) + `"`
	r := New(Options{MaxEntries: 100, MaxBytes: 10_000})
	for i := 1; i <= 10; i++ {
		r.Observe(false, result(i, big))
	}
	p := r.Page(0, 0)
	if len(p.Entries) != 3 || p.Entries[2].Seq != 10 {
		t.Fatalf("held %d entries (last %d); want the 3 newest that fit 10,000 bytes", len(p.Entries), p.Entries[len(p.Entries)-1].Seq)
	}
	if r.bytes > 10_000 || r.n != 3 {
		t.Fatalf("ring holds %d bytes, over its budget", r.bytes)
	}
}

func TestRingCutsLongMessagesButCountsTheirSize(t *testing.T) {
	r := New(Options{})
	long := result(1, `"`+strings.Repeat("y", 10_000)+`"`)
	short := result(2, `"y"`)
	r.Observe(false, long)
	r.Observe(false, short)
	p := r.Page(0, 0)
	if e := p.Entries[0]; !e.Cut || len(e.Message) != MaxMessageText || e.Size != len(long) {
		t.Fatalf("long: cut %v, kept %d, size %d; want cut at %d with the size %d", e.Cut, len(e.Message), e.Size, MaxMessageText, len(long))
	}
	if e := p.Entries[1]; e.Cut || e.Message != string(short) {
		t.Fatalf("short: cut %v, message %q; want it whole", e.Cut, e.Message)
	}
}

func TestRingKindsMethodsAndLatency(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	r := New(Options{Now: c.now})
	r.Observe(true, call(7, "operation.call"))
	c.t = c.t.Add(1500 * time.Microsecond)
	r.Observe(false, []byte(`{"jsonrpc":"2.0","method":"kv.get","id":7,"params":{}}`)) // the extension's own id 7
	c.t = c.t.Add(time.Millisecond)
	r.Observe(true, result(7, `{}`)) // answers the extension's kv.get
	r.Observe(false, []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}`))
	r.Observe(false, []byte(`{"jsonrpc":"2.0","method":"log","params":{}}`))
	r.Observe(false, []byte(`{"jsonrpc":"2.0","id":99,"result":1}`)) // answers nothing seen
	r.Observe(false, []byte(`not json`))
	want := []struct {
		dir, kind, method, id string
		latency               int64
	}{
		{client.WireToExtension, client.WireRequest, "operation.call", "7", 0},
		{client.WireFromExtension, client.WireRequest, "kv.get", "7", 0},
		{client.WireToExtension, client.WireAnswer, "kv.get", "7", 1000},
		{client.WireFromExtension, client.WireError, "operation.call", "7", 2500},
		{client.WireFromExtension, client.WireNotification, "log", "", 0},
		{client.WireFromExtension, client.WireAnswer, "", "99", 0},
		{client.WireFromExtension, client.WireOther, "", "", 0},
	}
	p := r.Page(0, 0)
	if len(p.Entries) != len(want) {
		t.Fatalf("%d entries; want %d", len(p.Entries), len(want))
	}
	for i, w := range want {
		e := p.Entries[i]
		if e.Direction != w.dir || e.Kind != w.kind || e.Method != w.method || e.ID != w.id || e.LatencyMicros != w.latency {
			t.Errorf("entry %d = %s %s %q id %q latency %d; want %s %s %q id %q latency %d",
				i, e.Direction, e.Kind, e.Method, e.ID, e.LatencyMicros, w.dir, w.kind, w.method, w.id, w.latency)
		}
	}
}

func TestRingRedactsSecretResolveResultsOnly(t *testing.T) {
	r := New(Options{})
	r.Observe(false, call(3, "secret.resolve"))
	r.Observe(true, result(3, `{"value":"hunter2"}`))
	r.Observe(false, call(4, "kv.get"))
	r.Observe(true, result(4, `{"value":"plain"}`))
	p := r.Page(0, 0)
	secret, other := p.Entries[1], p.Entries[3]
	if strings.Contains(secret.Message, "hunter2") || !secret.Redacted || !strings.Contains(secret.Message, RedactedResult) {
		t.Fatalf("secret.resolve answer kept as %q (redacted %v); want its result replaced", secret.Message, secret.Redacted)
	}
	if secret.Size != len(result(3, `{"value":"hunter2"}`)) {
		t.Fatalf("redacted size %d; want the line's real size", secret.Size)
	}
	if other.Redacted || !strings.Contains(other.Message, "plain") {
		t.Fatalf("kv.get answer = %q (redacted %v); want it whole", other.Message, other.Redacted)
	}
}

func TestPageBoundsAndCursor(t *testing.T) {
	r := New(Options{})
	for i := 1; i <= 300; i++ {
		r.Observe(true, call(i, "m"))
	}
	cases := []struct {
		name     string
		after    uint64
		limit    int
		n        int
		next     uint64
		more     bool
		firstSeq uint64
	}{
		{"default is the most", 0, 0, 256, 300, false, 45},
		{"over the most is the most", 0, 1000, 256, 300, false, 45},
		{"limit", 100, 10, 10, 110, true, 101},
		{"at the end", 300, 10, 0, 300, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := r.Page(c.after, c.limit)
			if len(p.Entries) != c.n || p.Next != c.next || p.More != c.more {
				t.Fatalf("%d entries, next %d, more %v; want %d, %d, %v", len(p.Entries), p.Next, p.More, c.n, c.next, c.more)
			}
			if c.n > 0 && p.Entries[0].Seq != c.firstSeq {
				t.Fatalf("first seq %d; want %d", p.Entries[0].Seq, c.firstSeq)
			}
		})
	}
}

func TestWaitReturnsWhenAnEntryArrives(t *testing.T) {
	r := New(Options{})
	got := make(chan client.WirePage, 1)
	go func() { got <- r.Wait(context.Background(), 0, 0, 60*time.Second) }()
	r.Observe(true, call(1, "m"))
	select {
	case p := <-got:
		if len(p.Entries) != 1 {
			t.Fatalf("woke with %d entries; want 1", len(p.Entries))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Wait did not return when an entry arrived")
	}
	// Negative control: nothing new, a short wait ends empty.
	if p := r.Wait(context.Background(), 1, 0, 10*time.Millisecond); len(p.Entries) != 0 || p.Next != 1 {
		t.Fatalf("empty wait = %+v; want no entries and next 1", p)
	}
}

// BenchmarkObserve is what the tap adds to each line the daemon moves: a
// request and its answer of about 200 bytes each.
func BenchmarkObserve(b *testing.B) {
	r := New(Options{})
	req := call(1, "operation.call")
	req = append(req[:len(req)-3], []byte(`{"text":"a short message of about the size a call carries, give or take a little more"}}`)...)
	ans := result(1, `{"text":"a short message of about the size a call carries, give or take a little more"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Observe(true, req)
		r.Observe(false, ans)
	}
}
