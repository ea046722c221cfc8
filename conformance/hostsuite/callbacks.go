package hostsuite

import (
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// callbackChecks are the checks of what a host answers before any handler
// runs.
var callbackChecks = []check{
	{"CallbackAnswersBeforeAnyHandler", callbackAnswers, nil},
}

func callbackAnswers(x *ext) {
	cases := []struct {
		name, method string
		code         *protocol.Error
		names        string // what the message must name, when set
	}{
		{"catalogued, enabled, not served", protocol.MethodStateWork, protocol.ErrUnsupported, ""},
		{"a host-to-extension method", protocol.MethodRouteMatch, protocol.ErrMethodNotFound, ""},
		{"the lifecycle sent to the host", protocol.MethodInitialize, protocol.ErrMethodNotFound, ""},
		{"not catalogued", "no.such.method", protocol.ErrMethodNotFound, ""},
		{"a missing permission", protocol.MethodProbeList, protocol.ErrUndeclared, protocol.PermissionProbes},
		{"a missing surface", protocol.MethodWorkCancel, protocol.ErrUndeclared, protocol.SurfaceWorkKinds},
	}
	for _, tc := range cases {
		err := x.conn.Call(x.ctx, tc.method, map[string]any{}, nil)
		x.wantCode(tc.name+" ("+tc.method+")", err, tc.code)
		if tc.names != "" && err != nil && !strings.Contains(err.Error(), tc.names) {
			x.Errorf("%s (%s): %q does not name %s", tc.name, tc.method, err, tc.names)
		}
	}
	// Negative control: a served, enabled method reaches its handler.
	x.get(Extension, "k")
}
