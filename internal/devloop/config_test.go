package devloop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

func TestGenerateConfigHasAnEntryPerTypeAndNoSecretValue(t *testing.T) {
	m := &protocol.Manifest{Name: "weather", Provides: protocol.Provides{Extensions: []protocol.ExtensionType{{Type: "weather"}, {Type: "weather-alerts"}}}}
	dir := filepath.Join(t.TempDir(), "secrets")
	const value = "s3cr3t-7f1e"
	text, err := generate(m,
		map[string]jsontext.Value{"weather": jsontext.Value(`{"city":"Oslo"}`)},
		map[string]string{"api_key": "env:WEATHER_KEY", "token": value}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), value) {
		t.Fatalf("the generated config holds a secret's value:\n%s", text)
	}
	c, err := config.Parse(text)
	if err != nil {
		t.Fatalf("the generated config does not parse: %v\n%s", err, text)
	}
	if len(c.Scopes) != 1 || c.Scopes[0].ID != Scope {
		t.Fatalf("scopes: %+v", c.Scopes)
	}
	s := c.Scopes[0]
	want := map[string]string{"weather": `{"city":"Oslo"}`, "weather-alerts": `{}`}
	if len(s.Entries) != len(want) {
		t.Fatalf("entries: %+v", s.Entries)
	}
	for _, e := range s.Entries {
		got, _ := json.Marshal(e.Config)
		if e.Name != e.Type || string(got) != want[e.Type] || strings.Join(e.Secrets, ",") != "api_key,token" {
			t.Errorf("entry %+v (config %s), want config %s selecting api_key,token", e, got, want[e.Type])
		}
	}
	if s.SecretRefs["api_key"] != "env:WEATHER_KEY" {
		t.Errorf("api_key refers to %q, want dev's own variable", s.SecretRefs["api_key"])
	}
	path, ok := strings.CutPrefix(s.SecretRefs["token"], "file:")
	if !ok {
		t.Fatalf("token refers to %q, want a file", s.SecretRefs["token"])
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != value || st.Mode().Perm() != 0o600 {
		t.Errorf("the token's file holds %q with mode %v, want the value, owner-only", data, st.Mode().Perm())
	}
}

func TestFlagsRefuseWhatTheyCannotUse(t *testing.T) {
	cases := []struct {
		name    string
		entries []string
		secrets []string
		want    string
	}{
		{name: "entry without =", entries: []string{"weather"}, want: "is not TYPE=JSON"},
		{name: "entry not JSON", entries: []string{"weather={"}, want: "not valid JSON"},
		{name: "entry twice", entries: []string{"weather={}", "weather={}"}, want: "twice"},
		{name: "secret without =", secrets: []string{"api_key"}, want: "is not NAME=env:VAR"},
		{name: "secret name with a slash", secrets: []string{"../x=v"}, want: "letters, digits"},
		{name: "secret twice", secrets: []string{"a=env:A", "a=env:B"}, want: "twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEntries(tc.entries)
			if err == nil {
				_, err = ParseSecrets(tc.secrets)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := ParseEntries([]string{"weather={}", "alerts={\"a\":1}"}); err != nil {
		t.Errorf("good entries refused: %v", err)
	}
	if _, err := ParseSecrets([]string{"api_key=env:KEY", "token=value=with=equals"}); err != nil {
		t.Errorf("good secrets refused: %v", err)
	}
}

// TestPrintedCallActsInTheScopeOnlyWhenItUsesThePackage: the call command
// dev prints names the generated scope for a package that declares entry
// types (the scope uses it through its entries) and no scope for one that
// declares none, which the scope does not use and where a call naming it
// would be refused.
func TestPrintedCallActsInTheScopeOnlyWhenItUsesThePackage(t *testing.T) {
	op := protocol.Operation{Name: "echo.say", Kind: protocol.OperationHandler}
	tests := []struct {
		name  string
		types []protocol.ExtensionType
		want  string
	}{
		{"entry types", []protocol.ExtensionType{{Type: "echo"}}, "extension call --state /s --scope dev echo echo.say --input"},
		{"no entry types", nil, "extension call --state /s echo echo.say --input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &protocol.Manifest{Name: "echo", Version: "0.1.0"}
			m.Provides.Operations = []protocol.Operation{op}
			m.Provides.Extensions = tt.types
			var b strings.Builder
			printReady(&b, Paths{State: "/s"}, m, client.Extension{PID: 7})
			if !strings.Contains(b.String(), tt.want) {
				t.Fatalf("printed:\n%s\nwant a line holding %q", b.String(), tt.want)
			}
		})
	}
}
