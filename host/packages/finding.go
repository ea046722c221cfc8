package packages

import (
	"fmt"

	"github.com/open-conduit/open-conduit/protocol"
)

// Severities of a finding: an error stops install and start, a warning
// does not.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Finding is one problem with a package directory: a stable code from the
// host's diagnostic table, where it is and what to change. No message quotes
// a config value or a secret; they name the package's own declarations.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	// Path is where the problem is: a file relative to the package
	// directory, with a JSON pointer after '#' for a member of a JSON file
	// (open-conduit-extension.json#/provides/operations/0/kind) or a line
	// after ':' for a text file (playbooks/setup.md:12).
	Path    string `json:"path"`
	Message string `json:"message"`
	Remedy  string `json:"remedy"`
}

// String is the finding on one line: severity, code, where and what.
func (f Finding) String() string {
	return fmt.Sprintf("%s %s at %s: %s", f.Severity, f.Code, f.Path, f.Message)
}

// Report is every finding about one package directory, not the first.
type Report struct {
	Dir string `json:"dir"`
	// Name is the manifest's name, when the manifest could be read.
	Name     string    `json:"name,omitempty"`
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
}

// OK reports whether no finding is an error: warnings pass.
func (r Report) OK() bool { return r.Errors == 0 }

// Codes lists the distinct codes of the findings, in order of appearance.
func (r Report) Codes() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range r.Findings {
		if !seen[f.Code] {
			seen[f.Code] = true
			out = append(out, f.Code)
		}
	}
	return out
}

// checkRemedy is the remedy of a code whose table remedy is worded for an
// installed package; an author reads this one before installing.
var checkRemedy = map[string]string{
	protocol.CodeInvalidPackage: "correct what the message names in the package directory, then run open-conduit extension check on it again",
}

// add records a finding; an empty remedy is the code's remedy for a
// package being checked, else the one from the diagnostic table.
func (r *Report) add(code, severity, path, remedy, format string, args ...any) {
	if remedy == "" {
		remedy = checkRemedy[code]
	}
	if remedy == "" {
		if d, ok := protocol.Diagnose(code); ok {
			remedy = d.Remedy
		}
	}
	r.Findings = append(r.Findings, Finding{Code: code, Severity: severity, Path: path,
		Message: fmt.Sprintf(format, args...), Remedy: remedy})
	if severity == SeverityError {
		r.Errors++
	} else {
		r.Warnings++
	}
}

// errorf records an error finding with the code's own remedy.
func (r *Report) errorf(code, path, format string, args ...any) {
	r.add(code, SeverityError, path, "", format, args...)
}

// warnf records a warning finding with the code's own remedy.
func (r *Report) warnf(code, path, format string, args ...any) {
	r.add(code, SeverityWarning, path, "", format, args...)
}
