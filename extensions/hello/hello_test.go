package hello_test

import (
	"context"
	"errors"
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
