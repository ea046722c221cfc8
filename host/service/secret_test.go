package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// live is the probe behind a service whose generation a test swaps.
type live struct {
	gen atomic.Pointer[config.Generation]
	s   *session.Session
}

func startLive(t *testing.T, g *config.Generation) *live {
	t.Helper()
	db := openDB(t, t.TempDir(), true)
	t.Cleanup(func() { db.Close() })
	l := &live{}
	l.gen.Store(g)
	m := probe.Extension().Manifest
	svc := service.New(m, service.Deps{DB: db, Generation: l.gen.Load})
	s, err := session.Start(context.Background(), session.Package{Dir: probeDir, Manifest: m}, session.Options{Host: svc.Table()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	l.s = s
	return l
}

// resolve has the probe call secret.resolve and reports the host's answer.
func (l *live) resolve(t *testing.T, p protocol.SecretResolveParams) probe.Answer {
	t.Helper()
	params, _ := json.Marshal(p)
	in, _ := json.Marshal(probe.Call{Method: "secret.resolve", Params: params})
	var res protocol.OperationCallResult
	if err := l.s.Call(context.Background(), protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: "probe.call", Input: protocol.Payload{Data: in}, Authority: protocol.Authority{Scope: "mine"},
	}, &res); err != nil {
		t.Fatal(err)
	}
	var a probe.Answer
	if err := json.Unmarshal(res.Output.Data, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// secretGeneration: in "mine" the probe has an entry and a binding names
// api-bound; in "bound-only" a binding names api-bound and the probe has no
// entry. The file: references are relative, to the generation's Dir.
func secretGeneration(t *testing.T, dir string) *config.Generation {
	t.Helper()
	t.Setenv("OC_SERVICE_TEST_TOKEN", "main-4d1c")
	c := &config.Config{
		Connections: []config.Connection{
			{Name: "api-main", Type: "probe-api", SecretRefs: map[string]string{"token": "env:OC_SERVICE_TEST_TOKEN"}},
			{Name: "api-bound", Type: "probe-api", SecretRefs: map[string]string{"token": "file:bound-token"}},
		},
		Scopes: []config.Scope{{
			ID:          "mine",
			Entries:     []config.Entry{{Name: "p", Type: probe.Name, Connection: "api-main", Secrets: []string{"s1"}}},
			Bindings:    []config.Binding{{Name: "run", Connection: "api-bound"}},
			SecretRefs:  map[string]string{"s1": "file:secrets/s1"},
			Connections: []string{"api-main", "api-bound"},
		}, {
			ID:          "bound-only",
			Bindings:    []config.Binding{{Name: "run", Connection: "api-bound"}},
			Connections: []string{"api-bound"},
		}},
	}
	return &config.Generation{ID: 1, Config: c, Dir: dir}
}

func writeSecrets(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"secrets/s1": "s1-8b2e\n", "bound-token": "bound-93fa"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSecretResolveThroughTheService(t *testing.T) {
	dir := t.TempDir()
	writeSecrets(t, dir)
	l := startLive(t, secretGeneration(t, dir))
	cases := []struct {
		name   string
		params protocol.SecretResolveParams
		code   string
		want   string
	}{
		{"its entry's selected secret, a file relative to the config's directory",
			protocol.SecretResolveParams{Scope: "mine", Names: []string{"s1"}}, "", `"s1":"s1-8b2e"`},
		{"its entry's connection", protocol.SecretResolveParams{Scope: "mine", Connection: "api-main"}, "", `"token":"main-4d1c"`},
		{"a binding's connection in a scope with its entry", protocol.SecretResolveParams{Scope: "mine", Connection: "api-bound"}, "", `"token":"bound-93fa"`},
		{"a binding's connection in a scope without its entry", protocol.SecretResolveParams{Scope: "bound-only", Connection: "api-bound"}, protocol.CodeUnauthorized, ""},
		{"the scope's secrets without its entry", protocol.SecretResolveParams{Scope: "bound-only"}, protocol.CodeUnauthorized, ""},
		{"a scope that does not exist", protocol.SecretResolveParams{Scope: "nope", Connection: "api-bound"}, protocol.CodeUnauthorized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := l.resolve(t, tc.params)
			if a.Code != tc.code || !strings.Contains(string(a.Result), tc.want) {
				t.Fatalf("answer %+v, want code %q and %s", a, tc.code, tc.want)
			}
			if tc.code != "" && strings.Contains(a.Message, "bound-93fa") {
				t.Fatalf("a refusal quotes the secret: %s", a.Message)
			}
		})
	}
}

// TestSecretResolveFollowsTheGenerationAndItsDir swaps the generation under
// a running service: the next call answers from the new one, and a
// relative file: reference resolves against the new generation's Dir.
func TestSecretResolveFollowsTheGenerationAndItsDir(t *testing.T) {
	dir := t.TempDir()
	writeSecrets(t, dir)
	g := secretGeneration(t, dir)
	l := startLive(t, g)
	bound := protocol.SecretResolveParams{Scope: "bound-only", Connection: "api-bound"}
	if a := l.resolve(t, bound); a.Code != protocol.CodeUnauthorized {
		t.Fatalf("before: %+v", a)
	}
	next := secretGeneration(t, dir)
	next.Config.Scopes[1].Entries = []config.Entry{{Name: "p2", Type: probe.Name}}
	l.gen.Store(next)
	if a := l.resolve(t, bound); a.Code != "" || !strings.Contains(string(a.Result), `"token":"bound-93fa"`) {
		t.Fatalf("with an entry of its own there: %+v", a)
	}
	// Another directory holds no such file: the same reference no longer
	// resolves, and the answer names neither the path nor a value.
	elsewhere := secretGeneration(t, t.TempDir())
	l.gen.Store(elsewhere)
	a := l.resolve(t, protocol.SecretResolveParams{Scope: "mine", Names: []string{"s1"}})
	if a.Code != protocol.CodeNotFound || strings.Contains(a.Message, "secrets/s1") || strings.Contains(a.Message, dir) {
		t.Fatalf("a file missing from the generation's Dir: %+v", a)
	}
}
