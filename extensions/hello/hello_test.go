package hello_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

func TestGreetCountsPerNameInKV(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, hello.Extension())
	for i, name := range []string{"ada", "bob", "ada"} {
		got, err := sdktest.Call[hello.Greeting](ctx, h, "hello.greet", hello.GreetInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]int{0: 1, 1: 1, 2: 2}[i]
		if got.Greeting != "Hello, "+name+"!" || got.Count != want {
			t.Fatalf("greet %s: %+v, want count %d", name, got, want)
		}
	}
	if kv := h.Host().KV(hello.Namespace); string(kv["ada"]) != "2" || string(kv["bob"]) != "1" {
		t.Fatalf("KV %v", kv)
	}
	if _, err := sdktest.Call[hello.Greeting](ctx, h, "hello.greet", hello.GreetInput{}); !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
	r, err := h.Check(ctx, "hello-kv")
	if err != nil || r.Status != protocol.CheckOK || r.Detail != "2 names greeted, 0 heartbeats sent" {
		t.Fatalf("check: %+v %v", r, err)
	}
}

func TestManifestIsHostRunAndValid(t *testing.T) {
	m := hello.Extension().Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !protocol.IsHostRun(m.Command, hello.Name) {
		t.Fatalf("command %v", m.Command)
	}
}

// TestGreetAndHeartbeatCommitTheirEventWithTheirCount: a greeting in a
// scope and a heartbeat pass each land their count and their Event in one
// batch; a retried greeting (same request ID) is the same Event.
func TestGreetAndHeartbeatCommitTheirEventWithTheirCount(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, hello.Extension(), sdktest.WithScopes("s1"),
		sdktest.WithConfigure(protocol.ConfigureParams{Entries: []protocol.Entry{
			{Scope: "s1", Type: hello.Name, Name: "h1", Config: []byte(`{"greeting":"Hi"}`)},
		}}))
	greet := protocol.OperationCallParams{Operation: "hello.greet", RequestID: "r1",
		Authority: protocol.Authority{Scope: "s1"}, Input: protocol.Payload{Data: []byte(`{"name":"ada"}`)}}
	for range 2 {
		if err := h.Raw(ctx, protocol.MethodOperationCall, greet, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.RunTask(ctx, "hello-heartbeat"); err != nil {
		t.Fatal(err)
	}
	byType := map[string][]protocol.Event{}
	for _, e := range h.Host().Events() {
		byType[e.Type] = append(byType[e.Type], e)
	}
	if g := byType[hello.Greeted]; len(g) != 1 || g[0].DeliveryID != "greet/r1" {
		t.Fatalf("greeted Events %+v, want one for request r1", g)
	}
	if b := byType[hello.Heartbeat]; len(b) != 1 || !strings.Contains(string(b[0].Payload.Data), `"greeting":"Hi"`) {
		t.Fatalf("heartbeat Events %+v, want one with the entry's greeting", b)
	}
	for _, c := range h.Host().Commits() {
		if len(c.Emissions) != 1 || len(c.Puts) != 1 {
			t.Fatalf("a batch %+v does not carry its Event with its count", c)
		}
	}
}

// TestEntryConfigIsCheckedByItsType: hello's entry config takes only a
// greeting string; the SDK refuses anything else naming the field.
func TestEntryConfigIsCheckedByItsType(t *testing.T) {
	h := sdktest.New(t, hello.Extension())
	cases := []struct {
		config, field string
	}{
		{`{"colour":"red"}`, "/colour"},
		{`{"greeting":5}`, "/greeting"},
		{`{"greeting":"Hi"}`, ""},
		{`{}`, ""},
	}
	for _, tc := range cases {
		err := h.Raw(context.Background(), protocol.MethodValidate, protocol.ValidateParams{
			Kind: protocol.ValidateExtension, Type: hello.Name, Name: "h", Config: []byte(tc.config)}, nil)
		if tc.field == "" && err != nil || tc.field != "" && (!errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), tc.field)) {
			t.Errorf("%s: %v", tc.config, err)
		}
	}
}
