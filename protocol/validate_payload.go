package protocol

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PayloadStatus classifies an Event payload's schema against a manifest's
// provides.schemas (the seed's "Event payload schema evolution" table). The
// host applies it before any call, so whether a payload reaches extension
// code never depends on what the process does with it.
type PayloadStatus string

// Payload statuses.
const (
	// PayloadForeign: absent, or outside the extension's namespace; passed
	// verbatim, and reading it is a data contract.
	PayloadForeign PayloadStatus = "foreign"
	// PayloadCurrent: the version the extension writes; passed.
	PayloadCurrent PayloadStatus = "current"
	// PayloadUpcast: an older version still listed; passed verbatim, and the
	// SDK upcasts it before extension code sees it.
	PayloadUpcast PayloadStatus = "upcast"
	// PayloadRetired: own, older than the versions still read (including a
	// version skipped between two listed ones); not passed for decisions.
	PayloadRetired PayloadStatus = "retired"
	// PayloadNewer: own, newer than the written version (persisted before a
	// downgrade); not passed for decisions.
	PayloadNewer PayloadStatus = "newer"
	// PayloadUndeclared: own namespace, but an undeclared base or no version
	// suffix; not passed for decisions.
	PayloadUndeclared PayloadStatus = "undeclared"
)

// Readable reports whether a payload of this status is passed to the
// extension for decisions (route.match, dependency.filter, event.render).
func (s PayloadStatus) Readable() bool {
	return s == PayloadForeign || s == PayloadCurrent || s == PayloadUpcast
}

// SchemaID is the payload schema identifier <base>.v<version>.
func SchemaID(base string, version int) string {
	return base + ".v" + strconv.Itoa(version)
}

// ParseSchemaID splits <base>.v<N> into base and N. N must be a positive
// decimal without leading zeros, so each version has exactly one spelling.
func ParseSchemaID(id string) (base string, version int, ok bool) {
	i := strings.LastIndex(id, ".v")
	if i <= 0 {
		return "", 0, false
	}
	digits := id[i+2:]
	if digits == "" || digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return id[:i], n, true
}

// schema returns the declared schema with this base and at least one
// version.
func (m *Manifest) schema(base string) (Schema, bool) {
	for _, s := range m.Provides.Schemas {
		if s.Base == base && len(s.Versions) > 0 {
			return s, true
		}
	}
	return Schema{}, false
}

// PayloadStatus classifies a payload schema identifier ("" when the payload
// carries none) for this extension, deterministically.
func (m *Manifest) PayloadStatus(schema string) PayloadStatus {
	if schema == "" || !Namespace(m.Name, schema) {
		return PayloadForeign
	}
	base, v, ok := ParseSchemaID(schema)
	if !ok {
		return PayloadUndeclared
	}
	s, ok := m.schema(base)
	if !ok {
		return PayloadUndeclared
	}
	switch current := s.Versions[len(s.Versions)-1]; {
	case v == current:
		return PayloadCurrent
	case v > current:
		return PayloadNewer
	case slices.Contains(s.Versions, v):
		return PayloadUpcast
	}
	// Older than every listed version, or a version dropped from between
	// two listed ones: either way this release no longer reads it.
	return PayloadRetired
}

// CurrentSchemas lists the schema each declared base is written under
// (<base>.v<last>), in declaration order.
func (m *Manifest) CurrentSchemas() []string {
	var out []string
	for _, s := range m.Provides.Schemas {
		if len(s.Versions) > 0 {
			out = append(out, SchemaID(s.Base, s.Versions[len(s.Versions)-1]))
		}
	}
	return out
}

// CheckWrite enforces strict writes: a payload the extension produces
// (ingress observations and events, event.accept, emissions, recurrence
// occurrences, armed timers) is absent or the current version of one of its
// own schemas. Anything else is ErrUnreadableSchema, naming what to write.
func (m *Manifest) CheckWrite(schema string) error {
	status := m.PayloadStatus(schema)
	if schema == "" || status == PayloadCurrent {
		return nil
	}
	want := "declare a schema under " + strconv.Quote(m.Name+".") + " in provides.schemas and write its current version"
	if cur := m.CurrentSchemas(); len(cur) > 0 {
		want = "write the current version of one of its own schemas (" + strings.Join(cur, ", ") + ")"
	}
	switch status {
	case PayloadForeign:
		return Errorf(ErrUnreadableSchema, "payload schema %q is outside extension %s's namespace: %s", schema, m.Name, want)
	case PayloadUpcast, PayloadRetired, PayloadNewer:
		base, _, _ := ParseSchemaID(schema)
		s, _ := m.schema(base)
		return Errorf(ErrUnreadableSchema, "payload schema %q is %s, not the version this release writes: write %q", schema, statusWords(status), SchemaID(base, s.Versions[len(s.Versions)-1]))
	}
	if base, _, ok := ParseSchemaID(schema); ok {
		return Errorf(ErrUnreadableSchema, "payload schema base %q is not declared in provides.schemas: declare it, or %s", base, want)
	}
	return Errorf(ErrUnreadableSchema, "payload schema %q has no version suffix (<base>.v<N>): %s", schema, want)
}

// statusWords describes an own, non-current version for a refusal.
func statusWords(s PayloadStatus) string {
	switch s {
	case PayloadUpcast:
		return "an older version this release only reads"
	case PayloadRetired:
		return "a retired version"
	case PayloadNewer:
		return "newer than this release"
	}
	return fmt.Sprint(s)
}
