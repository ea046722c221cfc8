package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

func TestParseErrorsCarryPathLineAndColumn(t *testing.T) {
	// Each text breaks on its third line; "é" counts as one column.
	cases := []struct {
		name       string
		text       string
		code, path string
		line, col  int
	}{
		{"syntax error", "{\n  \"scopes\": [\n    {\"id\": \"a\",, }\n  ]\n}", CodeInvalidJSON, "/scopes/0", 3, 16},
		{"unknown field", "{\n  \"scopes\": [\n    {\"id\": \"a\", \"bogus\": 1}\n  ]\n}", CodeUnknownField, "/scopes/0/bogus", 3, 17},
		{"wrong type", "{\n  \"scopes\": [\n    {\"id\": \"é\", \"disabled\": \"yes\"}\n  ]\n}", CodeInvalidType, "/scopes/0/disabled", 3, 29},
		{"duplicate member", "{\n  \"scopes\": [\n    {\"id\": \"a\", \"id\": \"b\"}\n  ]\n}", CodeDuplicateField, "/scopes/0/id", 3, 17},
		{"duplicate member inside an opaque config", "{\"scopes\": [\n {\"id\": \"a\", \"entries\": [\n  {\"name\": \"e\", \"type\": \"t\", \"config\": {\"x\": 1, \"x\": 2}}]}]}",
			CodeDuplicateField, "/scopes/0/entries/0/config/x", 3, 49},
		{"text ends early", "{\n  \"scopes\": [\n    {\"id\": \"a\"}", CodeInvalidJSON, "/scopes", 3, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text))
			var ps Problems
			if c != nil || !errors.As(err, &ps) || len(ps) != 1 {
				t.Fatalf("Parse = %v, %v; want one problem", c, err)
			}
			p := ps[0]
			if p.Code != tc.code || p.Path != tc.path || p.Line != tc.line || p.Column != tc.col || p.Severity != Error {
				t.Errorf("got %s at %s %d:%d, want %s at %s %d:%d", p.Code, p.Path, p.Line, p.Column, tc.code, tc.path, tc.line, tc.col)
			}
			if want := fmt.Sprintf("line %d, column %d", tc.line, tc.col); !strings.Contains(p.Message, want) {
				t.Errorf("message %q does not say %q", p.Message, want)
			}
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Errorf("%v does not match protocol.ErrInvalid", err)
			}
		})
	}
	// Negative control: the texts, corrected, parse.
	for _, good := range []string{
		"{\n  \"scopes\": [\n    {\"id\": \"a\" }\n  ]\n}",
		"{\n  \"scopes\": [\n    {\"id\": \"é\", \"disabled\": true}\n  ]\n}",
		"{\"scopes\": [{\"id\": \"a\", \"entries\": [{\"name\": \"e\", \"type\": \"t\", \"config\": {\"x\": 1, \"y\": 2}}]}]}",
	} {
		if _, err := Parse([]byte(good)); err != nil {
			t.Errorf("a good text: %v", err)
		}
	}
}

func TestParseTypeMessagesSpeakJSON(t *testing.T) {
	_, err := Parse([]byte(`{"scopes": {"id": "a"}}`))
	if err == nil || !strings.Contains(err.Error(), "JSON object, where the config format wants an array") || strings.Contains(err.Error(), "config.Scope") {
		t.Fatalf("message %v", err)
	}
}

func TestLocatePlacesCheckProblemsInTheText(t *testing.T) {
	text := "{\n" +
		"  \"scopes\": [{\n" +
		"    \"id\": \"one\",\n" +
		"    \"entries\": [{\"name\": \"a\", \"type\": \"nope\"}],\n" +
		"    \"routes\": [{\"binding\": \"x\", \"handler\": \"manual\"}]\n" +
		"  }]\n" +
		"}\n"
	c, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ps := Check(c, testPkgs())
	ps.Locate([]byte(text))
	want := map[string][2]int{
		"/scopes/0/entries/0/type":   {4, 31},
		"/scopes/0/routes/0/binding": {5, 17},
	}
	if len(ps) != len(want) {
		t.Fatalf("problems %v", ps)
	}
	for _, p := range ps {
		w, ok := want[p.Path]
		if !ok || p.Line != w[0] || p.Column != w[1] || !strings.HasPrefix(p.Message, fmt.Sprintf("line %d, column %d: ", w[0], w[1])) {
			t.Errorf("%s at %d:%d (%s), want %v", p.Path, p.Line, p.Column, p.Message, w)
		}
	}
	// A problem already placed, and one at a path the text does not hold,
	// keep what they had.
	more := Problems{{Path: "/scopes/0/id", Line: 9, Column: 9, Message: "m"}, {Path: "/connections/0/name", Message: "m"}}
	more.Locate([]byte(text))
	if more[0].Line != 9 || more[0].Message != "m" || more[1].Line != 0 || more[1].Message != "m" {
		t.Errorf("located %+v", more)
	}
}

func TestHashIsOfTheConfigNotItsText(t *testing.T) {
	base := `{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greeting":"hi","n":1}}]}]}`
	hash := func(text string) string {
		t.Helper()
		c, err := Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return Hash(c)
	}
	h := hash(base)
	if len(h) != 16 {
		t.Fatalf("hash %q is not 16 hex characters", h)
	}
	same := map[string]string{
		"re-indented":               "{\n  \"scopes\": [\n    {\n      \"id\": \"demo\",\n      \"entries\": [\n        {\"name\": \"h\", \"type\": \"hello\", \"config\": {\"greeting\": \"hi\", \"n\": 1}}\n      ]\n    }\n  ]\n}\n",
		"members reordered":         `{"scopes":[{"entries":[{"config":{"n":1,"greeting":"hi"},"type":"hello","name":"h"}],"id":"demo"}]}`,
		"a default written out":     `{"scopes":[{"id":"demo","disabled":false,"entries":[{"name":"h","type":"hello","config":{"greeting":"hi","n":1}}]}]}`,
		"an empty list written out": `{"connections":[],"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greeting":"hi","n":1.0}}]}]}`,
	}
	for name, text := range same {
		if got := hash(text); got != h {
			t.Errorf("%s: hash %s, want %s", name, got, h)
		}
	}
	differ := map[string]string{
		"a config value":     strings.Replace(base, `"hi"`, `"ho"`, 1),
		"a number":           strings.Replace(base, `"n":1`, `"n":2`, 1),
		"a scope id":         strings.Replace(base, `"demo"`, `"demo2"`, 1),
		"the scope disabled": strings.Replace(base, `"id":"demo",`, `"id":"demo","disabled":true,`, 1),
	}
	for name, text := range differ {
		if got := hash(text); got == h {
			t.Errorf("%s changed, the hash did not", name)
		}
	}
}

func TestStarterPassesCheck(t *testing.T) {
	passesCheck(t, Starter)
	examples := exampleManifests(t)
	// Negative control: checked against fewer packages than it was made
	// for, it names types nothing declares.
	if ps := Check(Starter(examples), examples[:1]); len(ps.Errors()) == 0 {
		t.Error("a starter for every example passed against one")
	}
}

func TestStarterShape(t *testing.T) {
	alpha := pkg("alpha", extType("alpha"), connType("alpha",
		protocol.Field{Name: "token", Secret: true}, protocol.Field{Name: "url", Default: "https://a.example"}, protocol.Field{Name: "team"}),
		operation("alpha.do", protocol.OperationHandler))
	alpha.Provides.Extensions[0].Fields = []protocol.Field{{Name: "days", Default: "7"}, {Name: "name"}}
	c := Starter([]*protocol.Manifest{alpha, pkg("beta", extType("beta"))})
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"id": "main"`,
		`"name": "alpha",` + "\n" + `          "type": "alpha",` + "\n" + `          "config": {` + "\n" + `            "days": "7"` + "\n" + `          },` + "\n" + `          "connection": "alpha"`,
		`"token": "env:ALPHA_TOKEN"`,
		`"url": "https://a.example"`,
		`"alpha.do"`,
		`"handler": "manual"`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the starter lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), `"team"`) {
		t.Errorf("a field with no default is written out:\n%s", data)
	}
	if e := c.Scopes[0].Entries[1]; e.Type != "beta" || e.Connection != "" {
		t.Errorf("beta's entry %+v names a connection beta does not declare", e)
	}
}

// TestParseRefusesAConfigThatIsNotAnObject: null decodes into an empty
// config without complaint, so Parse must refuse it itself; every other
// non-object fails decoding. Each is one problem at "/", placed in the text.
func TestParseRefusesAConfigThatIsNotAnObject(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
	}{
		{"null", 1, 1},
		{"\n  null\n", 2, 3},
		{"[]", 1, 1},
		{`"scopes"`, 1, 1},
		{"0", 1, 1},
		{"true", 1, 1},
	} {
		c, err := Parse([]byte(tc.text))
		var ps Problems
		if c != nil || !errors.As(err, &ps) || len(ps) != 1 {
			t.Errorf("%q: Parse = %v, %v; want one problem", tc.text, c, err)
			continue
		}
		if p := ps[0]; p.Path != "/" || p.Code != CodeInvalidType || p.Line != tc.line || p.Column != tc.col || !strings.Contains(p.Message, "wants an object") {
			t.Errorf("%q: %+v", tc.text, p)
		}
	}
	// Negative control: the empty object is a config, with no scopes.
	if c, err := Parse([]byte(" {} ")); err != nil || c == nil || len(c.Scopes) != 0 {
		t.Errorf("{}: %v %v", c, err)
	}
}
