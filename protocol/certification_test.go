package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCertificationAcceptsAFixtureOrACommand(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		cases      int
	}{
		{"inline fixture", `{"fixture": {"operations": [{"operation": "acme.greet", "input": {"name": "Ada"},
			"expect": {"output": {"greeting": "Hello, Ada!"}}}, {"operation": "acme.greet", "expect": {"code": "invalid"}}],
			"ingress": [{"type": "acme", "config": {}, "delivery": {"id": 1}, "family": "acme.pushed"}]}}`, 3},
		{"empty fixture", `{"fixture": {}}`, 0},
		{"command", `{"command": ["acme-extension", "fixture"]}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseCertification([]byte(tc.text))
			if err != nil {
				t.Fatalf("ParseCertification: %v", err)
			}
			n := 0
			if f.Fixture != nil {
				n = len(f.Fixture.Operations) + len(f.Fixture.Ingress)
			}
			if n != tc.cases {
				t.Errorf("got %d cases, want %d", n, tc.cases)
			}
		})
	}
}

func TestParseCertificationRefusesEachBrokenRule(t *testing.T) {
	const secret = "s3cr3t-token-value"
	for _, tc := range []struct {
		name, text string
		// want is every rule id and path the refusal names, in order.
		want []string
	}{
		{"not JSON", `{"fixture": `, []string{"certification_json@/fixture"}},
		{"empty file", ``, []string{"certification_json@"}},
		{"not an object", `["` + secret + `"]`, []string{"certification_json@"}},
		{"null", `null`, []string{"certification_json@"}},
		{"neither fixture nor command", `{}`, []string{"certification_empty@"}},
		{"both", `{"fixture": {}, "command": ["x"]}`, []string{"certification_both@"}},
		{"empty command", `{"command": []}`, []string{"certification_command@/command"}},
		{"unknown top-level member", `{"fixtures": {}}`, []string{"certification_unknown_field@/fixtures"}},
		{"unknown case member", `{"fixture": {"operations": [{"operation": "a.b", "token": "` + secret + `"}]}}`,
			[]string{"certification_unknown_field@/fixture/operations/0/token"}},
		{"wrong type", `{"fixture": {"operations": [{"operation": "` + secret + `", "input": 5}]}}`, []string{"case_input@/fixture/operations/0/input"}},
		{"operation not a string", `{"fixture": {"operations": [{"operation": 5}]}}`, []string{"certification_type@/fixture/operations/0/operation"}},
		{"every case problem at once", `{"fixture": {"operations": [{"operation": "", "input": ["` + secret + `"],
			"expect": {"output": {}, "code": "no_such_code"}}], "ingress": [{"type": "", "config": "` + secret + `"}]}}`,
			[]string{"case_operation@/fixture/operations/0/operation", "case_input@/fixture/operations/0/input",
				"case_expect@/fixture/operations/0/expect", "case_code@/fixture/operations/0/expect/code",
				"case_type@/fixture/ingress/0/type", "case_config@/fixture/ingress/0/config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseCertification([]byte(tc.text))
			if err == nil {
				t.Fatalf("accepted %s: %+v", tc.text, f)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", err)
			}
			var ce *CertificationError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *CertificationError", err)
			}
			var got []string
			for _, p := range ce.Problems {
				got = append(got, p.Rule+"@"+p.Path)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the refusal quotes a value from the file: %v", err)
			}
		})
	}
}
