package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestSDKServesOnlyHostToExtensionMethodsThroughDescriptors: every method
// the SDK's own table registers is catalogued host-to-extension, and has a
// descriptor, so the host invokes it with the types the SDK decodes.
func TestSDKServesOnlyHostToExtensionMethodsThroughDescriptors(t *testing.T) {
	type in struct{}
	x := New("acme").
		Operation("acme.op", Handler(func(context.Context, *Request, in) (struct{}, error) { return struct{}{}, nil })).
		Task("acme-sync", time.Minute, func(context.Context, *Request) error { return nil }).
		Check("acme-ok", func(context.Context, *Request, bool) (string, error) { return "", nil }).
		Validate(func(context.Context, *Request, ValidateParams) (ValidateResult, error) { return ValidateResult{}, nil })
	described := map[string]bool{}
	for _, d := range protocol.Descriptors() {
		described[d.Name] = true
	}
	s := &server{x: x, host: &Host{name: "acme"}}
	methods := s.table().Methods()
	want := []string{protocol.MethodCheckRun, protocol.MethodConfigure, protocol.MethodInitialize,
		protocol.MethodOperationCall, protocol.MethodShutdown, protocol.MethodTaskRun, protocol.MethodValidate}
	if len(methods) != len(want) {
		t.Fatalf("the SDK serves %v, want %v", methods, want)
	}
	for i, name := range methods {
		if name != want[i] {
			t.Errorf("the SDK serves %s, want %s", name, want[i])
		}
		def, ok := protocol.Lookup(name)
		if !ok || def.Direction != protocol.HostToExtension {
			t.Errorf("the SDK serves %s, which is not a catalogued H→E method", name)
		}
		if !described[name] {
			t.Errorf("the SDK serves %s, which has no descriptor", name)
		}
	}
}
