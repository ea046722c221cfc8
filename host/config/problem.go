package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Severity of a problem.
const (
	Error   = "error"
	Warning = "warning"
)

// Codes of the problems Parse reports: the text is not a config at all.
const (
	CodeInvalidJSON    = "invalid_json"
	CodeUnknownField   = "unknown_field"
	CodeInvalidType    = "invalid_type"
	CodeDuplicateField = "duplicate_field"
)

// Problem is one thing wrong with a config, at a JSON path, with a stable
// code and a sentence that says what to change. It never quotes a secret or
// a config value. Line and Column place it in the text it was read from
// (both 1-based, the column in characters) when it is known; a problem of a
// config built in code has none.
type Problem struct {
	Path     string `json:"path"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitzero"`
	Column   int    `json:"column,omitzero"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s %s: %s (%s)", p.Severity, p.Path, p.Message, p.Code)
}

// Problems is a config's problems, in path order.
type Problems []Problem

// Errors are the problems that refuse the config (warnings do not).
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == Error {
			out = append(out, p)
		}
	}
	return out
}

// Sort orders problems by path, then code.
func (ps Problems) Sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Code < ps[j].Code
	})
}

// Error makes the problems one error, a line each; it matches
// protocol.ErrInvalid.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is matches protocol.ErrInvalid.
func (ps Problems) Is(target error) bool { return errors.Is(protocol.ErrInvalid, target) }

// Locate places every problem that has no position yet at the member or
// element its path names in text, the config's text, and says the position
// at the start of its message, so an operator reading only the message
// finds it. A path text does not hold (a problem of something missing)
// stays without a position.
func (ps Problems) Locate(text []byte) {
	want := map[string]bool{}
	for _, p := range ps {
		if p.Line == 0 && p.Path != "" && p.Path != "/" {
			want[p.Path] = true
		}
	}
	if len(want) == 0 {
		return
	}
	at := offsets(text, want)
	for i := range ps {
		p := &ps[i]
		if off, ok := at[p.Path]; ok && p.Line == 0 {
			p.Line, p.Column = position(text, off)
			p.Message = positioned(p.Line, p.Column, p.Message)
		}
	}
}

// offsets finds where each wanted JSON pointer starts in text: the member
// name for an object member, the value for an array element.
func offsets(text []byte, want map[string]bool) map[string]int {
	out := map[string]int{}
	d := jsontext.NewDecoder(bytes.NewReader(text), jsontext.AllowDuplicateNames(true))
	for len(out) < len(want) {
		start := skipSeparators(text, int(d.InputOffset()))
		if _, err := d.ReadToken(); err != nil {
			break
		}
		p := string(d.StackPointer())
		if _, seen := out[p]; want[p] && !seen {
			out[p] = start
		}
	}
	return out
}

// skipSeparators moves past whitespace, ',' and ':' to the next token.
func skipSeparators(text []byte, off int) int {
	for off < len(text) && strings.IndexByte(" \t\r\n,:", text[off]) >= 0 {
		off++
	}
	return off
}

// position is the 1-based line and character column of byte offset off.
func position(text []byte, off int) (line, column int) {
	off = min(max(off, 0), len(text))
	before := text[:off]
	line = 1 + strings.Count(string(before), "\n")
	lineStart := strings.LastIndexByte(string(before), '\n') + 1
	return line, 1 + utf8.RuneCount(before[lineStart:])
}

func positioned(line, column int, msg string) string {
	return fmt.Sprintf("line %d, column %d: %s", line, column, msg)
}

// decodeError turns a strict-decoding failure of text into one Problems
// error: the JSON path, the line and column, a stable code.
func decodeError(text []byte, err error) error {
	p := Problem{Path: "/", Code: CodeInvalidJSON, Severity: Error}
	off := -1
	var se *json.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		off = int(se.ByteOffset)
		p.Path = pointer(se.JSONPointer)
		p.Code, p.Message = CodeInvalidType, typeMessage(se)
		if errors.Is(se.Err, json.ErrUnknownName) {
			p.Code, p.Message = CodeUnknownField, "this field is not part of the config format; correct its name or remove it"
		}
	case errors.As(err, &syn):
		off = int(syn.ByteOffset)
		p.Path = pointer(syn.JSONPointer)
		p.Message = fmt.Sprintf("the file is not valid JSON here: %v", syn.Err)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			p.Code, p.Message = CodeDuplicateField, "this field appears twice in its object: keep one"
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			p.Message = "the text ends before its JSON does: close every { and [ it opens"
		}
	default:
		p.Message = err.Error()
	}
	if off >= 0 {
		p.Line, p.Column = position(text, off)
		p.Message = positioned(p.Line, p.Column, p.Message)
	}
	return Problems{p}
}

func pointer(p jsontext.Pointer) string {
	if p == "" {
		return "/"
	}
	return string(p)
}

// typeMessage says what JSON the config format wants where a value has the
// wrong type, in JSON's words rather than Go's.
func typeMessage(se *json.SemanticError) string {
	if se.GoType == nil {
		return "this value has the wrong type"
	}
	want := jsonKindOf(se.GoType)
	if se.JSONKind == 0 {
		return fmt.Sprintf("this value has the wrong type: write %s", want)
	}
	return fmt.Sprintf("this is a JSON %s, where the config format wants %s", kindName(se.JSONKind), want)
}

func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
