package protocol

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is one broken manifest rule. A linter reports every Problem it
// finds, each on its own line, so an author fixes them in one pass.
type Problem struct {
	// Path is a JSON pointer to the offending member, such as
	// "/provides/operations/0/kind".
	Path string
	// Rule is the stable snake_case id of the broken rule, such as
	// "operation_kind"; programs and tests match on it, never on Message.
	Rule string
	// Message says in one sentence what is wrong and what to change. It
	// never echoes a value that could be a secret (field defaults, options).
	Message string
}

// String is the problem as a report line: its path, then its message.
func (p Problem) String() string { return p.Path + ": " + p.Message }

// Rule ids that change how a ManifestError matches: an unknown permission is
// refused as needing a newer Open Conduit, as an unknown field is.
const RuleUnknownPermission = "unknown_permission"

// ManifestError is a manifest that broke one or more rules. It matches
// ErrNeedsNewerHost under errors.Is when a problem is an unknown permission,
// and ErrInvalid when any other problem is present, so a manifest whose only
// fault is a permission from a newer release is not called invalid.
// errors.As to *Error yields the primary code (needs_newer_host first), so
// CodeOf works on it and it can cross the wire.
type ManifestError struct {
	Problems []Problem
}

// Error lists the problems, one per line prefixed by its path.
func (e *ManifestError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "manifest: invalid"
	case 1:
		return "manifest: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "manifest: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n")
		b.WriteString(p.String())
	}
	return b.String()
}

// needsNewerHost reports whether a problem is fixed by upgrading the host.
func (e *ManifestError) needsNewerHost() bool {
	return slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Rule == RuleUnknownPermission })
}

// invalid reports whether a problem is the package's own fault.
func (e *ManifestError) invalid() bool {
	return len(e.Problems) == 0 ||
		slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Rule != RuleUnknownPermission })
}

// Is matches ErrNeedsNewerHost and ErrInvalid as the type comment says.
func (e *ManifestError) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	switch t.Code {
	case CodeNeedsNewerHost:
		return e.needsNewerHost()
	case CodeInvalid:
		return e.invalid()
	}
	return false
}

// As sets a **Error target to the error's primary code with the full
// message, so CodeOf and the wire encoder see a coded refusal.
func (e *ManifestError) As(target any) bool {
	t, ok := target.(**Error)
	if !ok {
		return false
	}
	sentinel := ErrInvalid
	if e.needsNewerHost() {
		sentinel = ErrNeedsNewerHost
	}
	*t = &Error{Code: sentinel.Code, Message: e.Error()}
	return true
}

// Validate checks every manifest rule and returns nil or a *ManifestError
// listing all the problems found.
func (m *Manifest) Validate() error {
	if ps := m.Problems(); len(ps) > 0 {
		return &ManifestError{Problems: ps}
	}
	return nil
}

// ParseAndValidateManifest reads a manifest strictly (ParseManifest) and
// validates it. It returns nil and the error on either failure.
func ParseAndValidateManifest(data []byte) (*Manifest, error) {
	m, err := ParseManifest(data)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Problems returns every broken rule, in the order of the manifest's fields
// (the order Manifest and Provides declare them), so the output is stable.
func (m *Manifest) Problems() []Problem {
	c := &manifestChecker{m: m, nameOK: IsIdentifier(m.Name)}
	c.checkTop()
	c.checkProvides()
	return c.problems
}

// Limits the rules apply.
const (
	// MaxIdentifierLen bounds identifiers and identifier-shaped names.
	MaxIdentifierLen = 64
	// MaxDottedNameLen bounds dotted names (operations, families, …), which
	// carry the package name plus a path under it.
	MaxDottedNameLen = 128
	// MaxTitleChars bounds the display title, in characters.
	MaxTitleChars = 64
	// MaxSummaryBytes bounds the package's and each operation's summary.
	MaxSummaryBytes = 200
	// MaxVersionBytes bounds the package's informational version.
	MaxVersionBytes = 64
	// MaxGuidanceBytes bounds an operation's agent guidance.
	MaxGuidanceBytes = 4096
	// MaxFieldHelpBytes bounds a config field's help line.
	MaxFieldHelpBytes = 400
	// MaxPages bounds the pages one package contributes to the web view.
	MaxPages = 4
)

// ReservedNames are the names core registers for itself; no package may
// take one, so core's own events, Work and commands stay unambiguous.
var ReservedNames = []string{"core", "execution", "manual", "os", "open-conduit"}

// BuiltinOperations are the toolbelt operations core serves itself; a
// toolset may grant them beside the package's own.
var BuiltinOperations = []string{"read_context", "wait", "declare_outcome"}

// IsIdentifier reports whether s follows the identifier rule: a lower-case
// letter, then lower-case letters, digits, '-' or '_', at most
// MaxIdentifierLen bytes. Identifiers become paths, KV prefixes and command
// words, so they are kept to a portable alphabet.
func IsIdentifier(s string) bool {
	if s == "" || len(s) > MaxIdentifierLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return isTargetKind(s)
}

// isTargetKind reports whether s is lower-case letters, digits, '-' or '_'
// (the identifier alphabet with any first character), non-empty.
func isTargetKind(s string) bool {
	if s == "" || len(s) > MaxIdentifierLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// IsReservedName reports whether name is one of ReservedNames.
func IsReservedName(name string) bool { return slices.Contains(ReservedNames, name) }

// isDotted reports whether s is two or more non-empty segments of the
// identifier alphabet joined by '.', the first an identifier: the shape of
// an operation name in any namespace.
func isDotted(s string) bool {
	if len(s) > MaxDottedNameLen {
		return false
	}
	segs := strings.Split(s, ".")
	if len(segs) < 2 || !IsIdentifier(segs[0]) {
		return false
	}
	for _, seg := range segs[1:] {
		if !isTargetKind(seg) {
			return false
		}
	}
	return true
}

// isOneLine reports whether s holds no line break.
func isOneLine(s string) bool { return !strings.ContainsAny(s, "\r\n") }

// Pointer builds a JSON pointer (RFC 6901) from member names and indexes,
// the paths problems are reported at.
func Pointer(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		switch v := p.(type) {
		case int:
			b.WriteString(strconv.Itoa(v))
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(v, "~", "~0"), "/", "~1"))
		}
	}
	return b.String()
}

func ptr(parts ...any) string { return Pointer(parts...) }

// manifestChecker accumulates problems while walking one manifest.
type manifestChecker struct {
	m *Manifest
	// nameOK says the package name is an identifier. When it is not, the
	// namespace half of the naming rules is skipped so one bad name does not
	// drown the report in a problem per declaration.
	nameOK   bool
	problems []Problem
}

func (c *manifestChecker) add(path, rule, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// identifierName checks an identifier-shaped declared name: the package
// name itself or name-… . seen catches duplicates within one kind.
func (c *manifestChecker) identifierName(p, kind, s string, seen map[string]bool) {
	name := c.m.Name
	switch {
	case !IsIdentifier(s):
		c.add(p, "identifier_name", "%s %q is not an identifier: use a lower-case letter, then lower-case letters, digits, '-' or '_', at most %d bytes", kind, s, MaxIdentifierLen)
	case c.nameOK && s != name && !(strings.HasPrefix(s, name+"-") && len(s) > len(name)+1):
		c.add(p, "identifier_name", "%s %q is outside the package's namespace: name it %q or start it with %q", kind, s, name, name+"-")
	}
	c.unique(p, kind, s, seen)
}

// dottedName checks a dotted declared name: name.… under the package name.
func (c *manifestChecker) dottedName(p, kind, s string, seen map[string]bool) {
	name := c.m.Name
	switch {
	case !isDotted(s):
		c.add(p, "dotted_name", "%s %q is not a dotted name: use %s.<part>, each part lower-case letters, digits, '-' or '_', at most %d bytes", kind, s, name, MaxDottedNameLen)
	case c.nameOK && !strings.HasPrefix(s, name+"."):
		c.add(p, "dotted_name", "%s %q is outside the package's namespace: start it with %q", kind, s, name+".")
	}
	c.unique(p, kind, s, seen)
}

// unique reports a name already declared in the same kind.
func (c *manifestChecker) unique(p, kind, s string, seen map[string]bool) {
	if seen == nil {
		return
	}
	if seen[s] {
		c.add(p, "duplicate_name", "%s %q is declared more than once: remove or rename the repeat", kind, s)
	}
	seen[s] = true
}

// checkTop checks the members outside provides, in field order.
func (c *manifestChecker) checkTop() {
	m := c.m
	switch {
	case !IsIdentifier(m.Name):
		c.add("/name", "name_identifier", "name %q is not an identifier: use a lower-case letter, then lower-case letters, digits, '-' or '_', at most %d bytes", m.Name, MaxIdentifierLen)
	case IsReservedName(m.Name):
		c.add("/name", "name_reserved", "name %q is reserved by Open Conduit (%s): choose another name", m.Name, strings.Join(ReservedNames, ", "))
	}
	if !isOneLine(m.Version) || len(m.Version) > MaxVersionBytes {
		c.add("/version", "version_line", "version must be one line of at most %d bytes", MaxVersionBytes)
	}
	if !isOneLine(m.Title) || utf8.RuneCountInString(m.Title) > MaxTitleChars {
		c.add("/title", "title_line", "title must be one line of at most %d characters: operators read it in lists", MaxTitleChars)
	}
	if !isOneLine(m.Summary) || len(m.Summary) > MaxSummaryBytes {
		c.add("/summary", "summary_line", "summary must be one line of at most %d bytes", MaxSummaryBytes)
	}
	if !slices.ContainsFunc(m.Protocol, SupportsVersion) {
		c.add("/protocol", "protocol_version", "protocol lists %v, none of which this Open Conduit speaks (%v): build against an SDK release that speaks one of %v", m.Protocol, Versions, Versions)
	}
	c.checkCommand()
	if m.KVVersion < 0 {
		c.add("/kv_version", "kv_version", "kv_version is %d: it must be 0 or more", m.KVVersion)
	}
	c.checkPermissions()
	if m.Playbooks != "" && escapesDir(m.Playbooks) {
		c.add("/playbooks", "playbooks_outside", "playbooks %q is outside the package directory: use a relative path inside it, such as \"playbooks\"", m.Playbooks)
	}
}

// checkCommand keeps the command inside the package directory, so install
// copies everything it runs and the host's executable checks cover it.
func (c *manifestChecker) checkCommand() {
	cmd := c.m.Command
	switch {
	case len(cmd) == 0:
		c.add("/command", "command_empty", "command is empty: name the package's executable, relative to its directory")
	case cmd[0] == "":
		c.add("/command/0", "command_empty", "command[0] is empty: name the package's executable, relative to its directory")
	case IsHostRun(cmd, c.m.Name):
		// Served by the host's own executable.
	case cmd[0] == "open-conduit":
		c.add("/command", "command_host_run", "a command starting with open-conduit must be exactly %q: any other arguments are refused", strings.Join(HostRunCommand(c.m.Name), " "))
	case escapesDir(cmd[0]) || path.Clean(slashed(cmd[0])) == ".":
		c.add("/command/0", "command_outside", "command[0] %q is not a file inside the package directory: use a relative path inside it", cmd[0])
	}
}

// slashed treats a backslash as a separator too, so a manifest written on
// Windows cannot escape through one.
func slashed(p string) string { return strings.ReplaceAll(p, `\`, "/") }

// escapesDir reports whether a package-relative path is absolute (or has a
// drive letter) or climbs out of the directory with "..".
func escapesDir(p string) bool {
	s := slashed(p)
	if strings.HasPrefix(s, "/") || len(s) >= 2 && s[1] == ':' {
		return true
	}
	clean := path.Clean(s)
	return clean == ".." || strings.HasPrefix(clean, "../")
}

// checkPermissions: known and distinct. An unknown one is its own rule
// because it means the package was built for a newer Open Conduit.
func (c *manifestChecker) checkPermissions() {
	seen := map[string]bool{}
	for i, p := range c.m.Permissions {
		at := ptr("permissions", i)
		switch {
		case !slices.Contains(KnownPermissions, p):
			c.add(at, RuleUnknownPermission, "permission %q is not known to this Open Conduit: correct it if it is a typo, otherwise upgrade Open Conduit (it knows %s)", p, strings.Join(KnownPermissions, ", "))
		case seen[p]:
			c.add(at, "duplicate_permission", "permission %q is listed more than once: remove the repeat", p)
		}
		seen[p] = true
	}
}
