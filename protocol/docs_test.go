package protocol

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is the protocol reference a stranger implements an extension from.
var docPath = filepath.Join("..", "docs", "protocol.md")

// codeSpan is an inline code span on one line: `name`.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// docNames collects what the document names: every inline code span, and
// every table cell (trimmed, with enclosing backticks removed).
func docNames(doc string) map[string]bool {
	names := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		names[m[1]] = true
	}
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, cell := range strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|") {
			cell = strings.TrimSpace(strings.ReplaceAll(cell, "\x00", "|"))
			names[strings.Trim(cell, "`")] = true
		}
	}
	return names
}

// missingFromDoc lists every catalogued method and every code the document
// does not name.
func missingFromDoc(doc string) []string {
	names := docNames(doc)
	var missing []string
	for _, m := range Catalogue() {
		if !names[m.Name] {
			missing = append(missing, "method "+m.Name)
		}
	}
	for _, c := range Codes() {
		if !names[c.Code] {
			missing = append(missing, "code "+c.Code)
		}
	}
	return missing
}

// TestProtocolDocCoversEveryMethodAndCode keeps docs/protocol.md complete:
// every method of Catalogue() and every code of Codes() appears in it, in
// backticks or in a table cell.
func TestProtocolDocCoversEveryMethodAndCode(t *testing.T) {
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("reading the protocol reference: %v", err)
	}
	doc := string(data)
	if missing := missingFromDoc(doc); len(missing) > 0 {
		t.Errorf("%s does not mention %d catalogue entries; add them (the method and code tables are generated from Catalogue() and Codes()):\n  %s",
			docPath, len(missing), strings.Join(missing, "\n  "))
	}

	// Negative controls: the check can fail. A made-up method is not found,
	// and a document with one method and one code taken out is caught.
	const madeUp = "zz_made_up.never_a_method"
	if _, ok := Lookup(madeUp); ok {
		t.Fatalf("%s must not be catalogued", madeUp)
	}
	if docNames(doc)[madeUp] {
		t.Errorf("the made-up method %s was found in %s: the check cannot fail", madeUp, docPath)
	}
	stripped := strings.NewReplacer("`"+MethodKVGet+"`", "", "| "+MethodKVGet+" |", "| |",
		"`"+CodeKVDowngrade+"`", "", "| "+CodeKVDowngrade+" |", "| |").Replace(doc)
	got := strings.Join(missingFromDoc(stripped), ",")
	if !strings.Contains(got, "method "+MethodKVGet) || !strings.Contains(got, "code "+CodeKVDowngrade) {
		t.Errorf("a document without %s and %s was not caught (missing: %q)", MethodKVGet, CodeKVDowngrade, got)
	}
}
