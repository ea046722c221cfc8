package validate

import (
	"context"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

func objects() []Object {
	return []Object{{Path: "/scopes/0/entries/0/config", Params: protocol.ValidateParams{Kind: "extension", Type: "acme"}}}
}

func TestWithMapsAnswersToProblems(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		answer   protocol.ValidateResult
		err      error
		code     string
		severity string
	}{
		{"accepted", protocol.ValidateResult{}, nil, "", ""},
		{"refused", protocol.ValidateResult{}, protocol.Errorf(protocol.ErrInvalid, "set url to an https URL"), CodeInvalidConfig, config.Error},
		{"warned", protocol.ValidateResult{Warnings: []string{"retries is ignored"}}, nil, CodeConfigWarning, config.Warning},
		{"crashed", protocol.ValidateResult{}, protocol.Errorf(protocol.ErrTransport, "broke"), CodeExtensionUnavailable, config.Error},
		{"stopping: the config is not the cause", protocol.ValidateResult{}, protocol.Errorf(protocol.ErrShuttingDown, "bye"), CodeExtensionUnavailable, config.Error},
		{"busy", protocol.ValidateResult{}, protocol.Errorf(protocol.ErrOverloaded, "64 in flight"), CodeExtensionUnavailable, config.Error},
		{"out of time", protocol.ValidateResult{}, context.DeadlineExceeded, CodeExtensionUnavailable, config.Error},
		{"does not validate", protocol.ValidateResult{}, protocol.Errorf(protocol.ErrMethodNotFound, "no"), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := With(ctx, "acme", func(context.Context, protocol.ValidateParams) (protocol.ValidateResult, error) {
				return tc.answer, tc.err
			}, objects())
			if tc.code == "" {
				if len(ps) != 0 {
					t.Fatalf("problems %v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Code != tc.code || ps[0].Severity != tc.severity || ps[0].Path != "/scopes/0/entries/0/config" {
				t.Fatalf("problems %v", ps)
			}
		})
	}
}

func TestRefusalsAreOneClippedLine(t *testing.T) {
	long := strings.Repeat("x", 1000) + "\nsecond line"
	ps := With(context.Background(), "acme", func(context.Context, protocol.ValidateParams) (protocol.ValidateResult, error) {
		return protocol.ValidateResult{}, protocol.Errorf(protocol.ErrInvalid, "%s", long)
	}, objects())
	if len(ps) != 1 || strings.Contains(ps[0].Message, "second line") || len(ps[0].Message) > maxMessage+100 {
		t.Fatalf("message %q", ps[0].Message)
	}
}

func TestWithRefusedBindingIsBindingRefused(t *testing.T) {
	cases := []struct {
		name, kind string
		err        error
		code       string
		message    string
	}{
		{"a refused binding", protocol.ValidateBinding, protocol.Errorf(protocol.ErrInvalid, "grant read_context"), CodeBindingRefused,
			`route handler acme-route (package acme) refuses binding "b": `},
		{"a refused route stays invalid config", protocol.ValidateRoute, protocol.Errorf(protocol.ErrInvalid, "set q"), CodeInvalidConfig,
			"acme refuses this acme-route config: "},
		{"a binding the package could not check is unavailable", protocol.ValidateBinding, protocol.Errorf(protocol.ErrTransport, "broke"), CodeExtensionUnavailable,
			"acme could not check this object: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []Object{{Path: "/scopes/0/routes/0/binding", Params: protocol.ValidateParams{Kind: tc.kind, Type: "acme-route", Scope: "s", Name: "b"}}}
			ps := With(context.Background(), "acme", func(context.Context, protocol.ValidateParams) (protocol.ValidateResult, error) {
				return protocol.ValidateResult{}, tc.err
			}, objs)
			if len(ps) != 1 || ps[0].Code != tc.code || ps[0].Path != objs[0].Path || !strings.HasPrefix(ps[0].Message, tc.message) {
				t.Fatalf("problems %v", ps)
			}
		})
	}
}
