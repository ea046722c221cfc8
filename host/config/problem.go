package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Severity of a problem.
const (
	Error   = "error"
	Warning = "warning"
)

// Problem is one thing wrong with a config, at a JSON path, with a stable
// code and a sentence that says what to change. It never quotes a secret or
// a config value.
type Problem struct {
	Path     string `json:"path"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
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

// decodeError turns a strict-decoding failure into one Problems error.
func decodeError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		path := string(se.JSONPointer)
		if path == "" {
			path = "/"
		}
		if errors.Is(se.Err, json.ErrUnknownName) {
			return Problems{{Path: path, Code: "unknown_field", Severity: Error,
				Message: "this field is not part of the config format; correct its name or remove it"}}
		}
		what := "has the wrong type"
		if se.JSONKind != 0 && se.GoType != nil {
			what = fmt.Sprintf("is a JSON %s where %s was expected", se.JSONKind, se.GoType)
		}
		return Problems{{Path: path, Code: "invalid_type", Severity: Error, Message: what}}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return Problems{{Path: string(syn.JSONPointer), Code: "invalid_json", Severity: Error,
			Message: fmt.Sprintf("the file is not valid JSON here (byte %d): %v", syn.ByteOffset, syn.Err)}}
	}
	return Problems{{Path: "/", Code: "invalid_json", Severity: Error, Message: err.Error()}}
}
