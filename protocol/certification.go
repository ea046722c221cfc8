package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// CertificationFileName is the name of a package's certification fixture
// file, in the package directory.
const CertificationFileName = "certification.json"

// CertificationFile is a package's certification.json: either an inline
// Fixture, or a Command (relative to the package directory) that prints the
// fixture as one JSON line and keeps serving what the fixture needs (a fake
// service, say) until its stdin closes. Exactly one is set. It is read
// strictly (ParseCertification), so a misspelt member is refused rather than
// silently certifying less.
type CertificationFile struct {
	Fixture *Fixture `json:"fixture,omitempty"`
	Command []string `json:"command,omitempty"`
}

// Fixture is what certification exercises a package with: the cases it runs
// against the surfaces the manifest declares. A declared ingress type needs
// an ingress case; an operation case may name only a handler operation the
// package declares.
type Fixture struct {
	Operations []OperationCase `json:"operations,omitempty"`
	Ingress    []IngressCase   `json:"ingress,omitempty"`
}

// OperationCase is one call of a handler operation and what it must answer.
type OperationCase struct {
	// Operation is the handler operation's name, as the manifest declares it.
	Operation string `json:"operation"`
	// Input is the operation's input data, a JSON object (default {}).
	Input jsontext.Value `json:"input,omitzero"`
	// Expect is what the call must answer; the zero value means any success.
	Expect OperationExpect `json:"expect,omitzero"`
}

// OperationExpect is the answer an operation case expects: at most one of
// Output and Code.
type OperationExpect struct {
	// Output is matched against the answer's data: an object matches when
	// the answer holds each of its members with a matching value (members
	// beyond them are allowed); any other value must be equal.
	Output jsontext.Value `json:"output,omitzero"`
	// Code is the wire code the call must be refused with (invalid, …).
	Code string `json:"code,omitempty"`
}

// IngressCase is one delivery to an ingress type the package declares.
type IngressCase struct {
	// Type is the declared extension type that takes ingress.
	Type string `json:"type"`
	// Config is the config of the entry the delivery is for, a JSON object.
	Config jsontext.Value `json:"config,omitzero"`
	// Delivery is what the source delivers, as the package receives it.
	Delivery jsontext.Value `json:"delivery,omitzero"`
	// Family is the Event family the delivery must produce; it is one the
	// type lists. Empty when every family of the source is re-derivable.
	Family string `json:"family,omitempty"`
}

// CertificationError is a certification file that broke one or more rules.
// It matches ErrInvalid under errors.Is.
type CertificationError struct {
	// Problems are the broken rules, each at a JSON pointer into the file.
	Problems []Problem
}

// Error lists the problems, one per line prefixed by its path.
func (e *CertificationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
		if p.Path == "" {
			lines[i] = p.Message
		}
	}
	return CertificationFileName + ": " + strings.Join(lines, "\n")
}

// Is matches ErrInvalid.
func (e *CertificationError) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == CodeInvalid
}

// ParseCertification reads a certification file strictly and checks its
// shape: a JSON object with exactly one of "fixture" and "command", a
// non-empty command, every operation case naming an operation with an
// object input and at most one of output and code (a known wire code),
// every ingress case naming a type. It returns nil and a
// *CertificationError listing every problem when any rule is broken.
// Whether the cases fit the package's manifest is the package check's job.
// No message quotes a value from the file beyond the names it declares.
func ParseCertification(data []byte) (*CertificationFile, error) {
	var f CertificationFile
	if v := jsontext.Value(bytes.TrimSpace(data)); v.IsValid() && v.Kind() != '{' {
		return nil, &CertificationError{Problems: []Problem{{Rule: "certification_json",
			Message: "the file is not a JSON object: it must hold one object with a \"fixture\" or a \"command\""}}}
	}
	if err := json.Unmarshal(data, &f, jsonOpts); err != nil {
		return nil, &CertificationError{Problems: []Problem{certificationDecodeProblem(err)}}
	}
	if ps := f.Problems(); len(ps) > 0 {
		return nil, &CertificationError{Problems: ps}
	}
	return &f, nil
}

// Problems returns every broken shape rule of a decoded file, in field order.
func (f *CertificationFile) Problems() []Problem {
	var ps []Problem
	add := func(path, rule, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case f.Fixture == nil && f.Command == nil:
		add("", "certification_empty", "the file has neither \"fixture\" nor \"command\": give an inline fixture object, or a command that prints one")
	case f.Fixture != nil && f.Command != nil:
		add("", "certification_both", "the file has both \"fixture\" and \"command\": keep one")
	}
	if f.Command != nil && (len(f.Command) == 0 || f.Command[0] == "") {
		add(Pointer("command"), "certification_command", "command is empty: name the program, relative to the package directory, that prints the fixture")
	}
	if f.Fixture == nil {
		return ps
	}
	for i, c := range f.Fixture.Operations {
		at := Pointer("fixture", "operations", i)
		if c.Operation == "" {
			add(at+"/operation", "case_operation", "operation is empty: name a handler operation the package declares")
		}
		if len(c.Input) > 0 && c.Input.Kind() != '{' {
			add(at+"/input", "case_input", "input is not a JSON object: an operation's input is an object")
		}
		if len(c.Expect.Output) > 0 && c.Expect.Code != "" {
			add(at+"/expect", "case_expect", "expect has both output and code: a refused call has no output, keep one")
		}
		if _, ok := LookupCode(c.Expect.Code); c.Expect.Code != "" && !ok {
			add(at+"/expect/code", "case_code", "expect.code %q is not a code this Open Conduit knows: use one of the protocol's error codes", c.Expect.Code)
		}
	}
	for i, c := range f.Fixture.Ingress {
		at := Pointer("fixture", "ingress", i)
		if c.Type == "" {
			add(at+"/type", "case_type", "type is empty: name the ingress type the delivery is for")
		}
		if len(c.Config) > 0 && c.Config.Kind() != '{' {
			add(at+"/config", "case_config", "config is not a JSON object: an entry's config is an object")
		}
	}
	return ps
}

// certificationDecodeProblem words a decoding failure by where it is and
// what kind of value was wanted, never by the value found, so a secret
// pasted into the file is not repeated.
func certificationDecodeProblem(err error) Problem {
	var se *json.SemanticError
	if errors.As(err, &se) {
		at := string(se.JSONPointer)
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			return Problem{Path: at, Rule: "certification_unknown_field",
				Message: fmt.Sprintf("member %s is not part of the certification format: correct its name or remove it", lastToken(at))}
		case se.GoType != nil:
			t := se.GoType
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return Problem{Path: at, Rule: "certification_type",
				Message: fmt.Sprintf("the value has the wrong type: want %s", jsonKindOf(t.Kind()))}
		}
		return Problem{Path: at, Rule: "certification_type", Message: "the value cannot be read here"}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return Problem{Path: string(syn.JSONPointer), Rule: "certification_json",
			Message: fmt.Sprintf("the file is not valid JSON (at byte %d): fix the syntax", syn.ByteOffset)}
	}
	return Problem{Rule: "certification_json", Message: "the file cannot be read as JSON: it must hold one object"}
}

// lastToken is the last member name of a JSON pointer, quoted.
func lastToken(p string) string {
	i := strings.LastIndexByte(p, '/')
	return fmt.Sprintf("%q", strings.NewReplacer("~1", "/", "~0", "~").Replace(p[i+1:]))
}

// jsonKindOf names the JSON kind a Go kind decodes from.
func jsonKindOf(k reflect.Kind) string {
	switch k {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return "a number"
}
