package protocol

import (
	"strings"
	"testing"
)

// TestCheckCallbackAnswersInTheHostsOrder walks each rule of what a host
// answers before any handler runs, with the served case as the negative
// control.
func TestCheckCallbackAnswersInTheHostsOrder(t *testing.T) {
	m := &Manifest{Name: "acme", Protocol: []int{1}, Command: []string{"acme-extension"},
		Provides: Provides{Recurrences: []Recurrence{{Kind: "acme.daily"}}}}
	served := func(method string) bool { return method == MethodKVGet || method == MethodTimerArm }
	cases := []struct {
		name   string
		method string
		inTx   bool
		want   *Error
		names  string
	}{
		{"served and enabled", MethodKVGet, false, nil, ""},
		{"served and enabled by a declared surface", MethodTimerArm, false, nil, ""},
		{"any method while an in-transaction call is outstanding", MethodKVGet, true, ErrReentrantCall, "in-transaction"},
		{"even an unknown one while in a transaction", "no.such.method", true, ErrReentrantCall, ""},
		{"not catalogued", "no.such.method", false, ErrMethodNotFound, "no.such.method"},
		{"host-to-extension", MethodRouteMatch, false, ErrMethodNotFound, ""},
		{"the lifecycle", MethodInitialize, false, ErrMethodNotFound, ""},
		{"the cancel notification sent as a call", MethodCancel, false, ErrMethodNotFound, ""},
		{"a permission the manifest lacks", MethodTelemetryCapture, false, ErrUndeclared, "telemetry.capture permission"},
		{"a surface the manifest lacks", MethodWorkCancel, false, ErrUndeclared, "work_kinds surface"},
		{"enabled, not served", MethodTimerCancel, false, ErrUnsupported, MethodTimerCancel},
		{"always enabled, not served", MethodStateWork, false, ErrUnsupported, ""},
	}
	for _, tc := range cases {
		err := CheckCallback(m, tc.method, served, tc.inTx)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want the handler to run", tc.name, err)
			}
			continue
		}
		if CodeOf(err) != tc.want.Code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want.Code)
		} else if !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s: %q does not name %q", tc.name, err, tc.names)
		}
	}
}
