package packages

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
)

// CheckOptions is what a check needs to know beyond the directory.
type CheckOptions struct {
	// Allow names that a playbook may mention though nothing declares
	// them: the package's own setup probes, which run inside its process
	// where a check cannot see them.
	Allow []string
	// Served are the manifests of the first-party packages this binary
	// serves. A host-run command is served only when its name is here, and
	// the names they register are taken, except by a package of the same
	// name, which replaces the served one.
	Served map[string]*protocol.Manifest
	// Beside are other packages the checked one would run beside (bundled,
	// installed). Their names are taken as the served ones are.
	Beside []discover.Package
}

// Check lints a package directory without starting it: the manifest's
// strict rules (each broken rule its own finding), the directory named
// after the manifest, the command, compatibility with this binary, names
// Open Conduit or the packages beside it register, the playbooks and the
// certification fixture. It returns every finding, not the first; the
// report is OK when none is an error.
func Check(dir string, opts CheckOptions) Report {
	c := newChecker(dir, opts)
	if c.layout() {
		c.conflicts()
		c.playbookReferences()
	}
	c.certification()
	return c.report()
}

// checker accumulates the findings about one directory.
type checker struct {
	dir  string
	opts CheckOptions
	rep  Report
	// m is the decoded manifest, nil when it could not be decoded; it may
	// still break rules (bad holds the pointers of those problems).
	m   *protocol.Manifest
	bad []string
	// playbooks are the <name>.md files of the playbooks directory,
	// relative to the package directory with forward slashes.
	playbooks []string
}

func newChecker(dir string, opts CheckOptions) *checker {
	dir = filepath.Clean(dir)
	return &checker{dir: dir, opts: opts, rep: Report{Dir: dir, Findings: []Finding{}}}
}

func (c *checker) report() Report { return c.rep }

// manifestAt is a finding's path at a member of the manifest.
func manifestAt(pointer string) string { return protocol.ManifestFile + "#" + pointer }

// layout checks what inspect checks: the directory, the manifest and its
// rules, the name, the command and the playbooks directory. It reports
// whether a manifest was decoded, so the checks that read it can run.
func (c *checker) layout() bool {
	st, err := os.Stat(c.dir)
	if err != nil || !st.IsDir() {
		c.rep.errorf(protocol.CodeInvalidPackage, ".", "%s is not a directory: give the package's directory, the one holding %s", c.dir, protocol.ManifestFile)
		return false
	}
	if !c.manifest() {
		return false
	}
	c.name()
	c.command()
	c.playbooksDir()
	return true
}

// manifest reads and decodes the manifest and reports each broken rule.
func (c *checker) manifest() bool {
	data, err := os.ReadFile(filepath.Join(c.dir, protocol.ManifestFile))
	if err != nil {
		why := "cannot be read"
		if errors.Is(err, os.ErrNotExist) {
			why = "is missing"
		}
		c.rep.errorf(protocol.CodeInvalidPackage, protocol.ManifestFile, "the manifest %s %s: every package directory holds one", protocol.ManifestFile, why)
		return false
	}
	m, err := protocol.ParseManifest(data)
	if err != nil {
		code := protocol.CodeInvalidPackage
		if protocol.CodeOf(err) == protocol.CodeNeedsNewerHost {
			code = protocol.CodeNeedsNewerHost
		}
		c.rep.errorf(code, protocol.ManifestFile, "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		return false
	}
	c.m, c.rep.Name = m, m.Name
	for _, p := range m.Problems() {
		c.bad = append(c.bad, p.Path)
		c.rep.errorf(ruleCode(p.Rule), manifestAt(p.Path), "%s [rule %s]", p.Message, p.Rule)
	}
	return true
}

// ruleCode is the code of a broken manifest rule, as discovery assigns it
// to the whole manifest: a permission from a newer release needs a newer
// host; a protocol list naming no version this host speaks is
// incompatible; anything else is an invalid package.
func ruleCode(rule string) string {
	switch rule {
	case protocol.RuleUnknownPermission:
		return protocol.CodeNeedsNewerHost
	case "protocol_version":
		return protocol.CodeIncompatibleProtocol
	}
	return protocol.CodeInvalidPackage
}

// broken reports whether a manifest rule failed at pointer or under it.
func (c *checker) broken(pointer string) bool {
	for _, p := range c.bad {
		if p == pointer || strings.HasPrefix(p, pointer+"/") {
			return true
		}
	}
	return false
}

// name checks the directory is named after the manifest, as discovery
// requires of an installed or bundled package.
func (c *checker) name() {
	base := filepath.Base(c.dir)
	if abs, err := filepath.Abs(c.dir); err == nil {
		base = filepath.Base(abs)
	}
	if base != c.m.Name && !c.broken("/name") {
		c.rep.errorf(protocol.CodeInvalidPackage, manifestAt("/name"),
			"the directory is named %q but the manifest's name is %q: name the package directory after its manifest", base, c.m.Name)
	}
}

// command checks the command runs here: the host's own executable for a
// host-run package this binary serves, else a file inside the package that
// exists, is executable and is built for this platform.
func (c *checker) command() {
	m := c.m
	if c.broken("/command") {
		return
	}
	if protocol.IsHostRun(m.Command, m.Name) {
		if _, ok := c.opts.Served[m.Name]; !ok {
			c.rep.errorf(protocol.CodeNotServed, manifestAt("/command"),
				"the command is 'open-conduit extension-run %s', which this open-conduit does not serve", m.Name)
		}
		return
	}
	rel := filepath.ToSlash(filepath.Clean(filepath.FromSlash(m.Command[0])))
	st, err := os.Stat(filepath.Join(c.dir, filepath.FromSlash(m.Command[0])))
	switch {
	case err != nil:
		c.rep.errorf(protocol.CodeInvalidPackage, rel,
			"the command %s does not exist in the package: build it there, or correct command[0], which is relative to the package directory", rel)
		return
	case !st.Mode().IsRegular():
		c.rep.errorf(protocol.CodeInvalidPackage, rel, "the command %s is not a regular file: command[0] names the executable", rel)
		return
	case st.Mode()&0o111 == 0:
		c.rep.errorf(protocol.CodeInvalidPackage, rel, "the command %s is not executable: chmod +x it", rel)
		return
	}
	var pe *PlatformError
	switch err := CheckPlatform(filepath.Join(c.dir, filepath.FromSlash(m.Command[0]))); {
	case errors.As(err, &pe) && pe.Built.OS == "":
		c.rep.errorf(protocol.CodeWrongPlatform, rel, "the command %s is neither a script (#!) nor an executable for %s", rel, pe.Want)
	case errors.As(err, &pe):
		c.rep.errorf(protocol.CodeWrongPlatform, rel, "the command %s is built for %s, but this host is %s", rel, pe.Built, pe.Want)
	case err != nil:
		c.rep.errorf(protocol.CodeInvalidPackage, rel, "the command %s cannot be read to check its platform", rel)
	}
}

// playbooksDir checks the declared playbooks directory exists and holds
// at least one <name>.md playbook.
func (c *checker) playbooksDir() {
	rel := c.m.Playbooks
	if rel == "" || c.broken("/playbooks") {
		return
	}
	rel = filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	entries, err := os.ReadDir(filepath.Join(c.dir, filepath.FromSlash(rel)))
	if err != nil {
		c.rep.errorf(protocol.CodeInvalidPackage, rel,
			"the playbooks directory %s the manifest declares is missing: add it with a <name>.md playbook, or drop playbooks from the manifest", rel)
		return
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && len(e.Name()) > len(".md") && c.regular(rel+"/"+e.Name()) {
			c.playbooks = append(c.playbooks, rel+"/"+e.Name())
		}
	}
	if len(c.playbooks) == 0 {
		c.rep.warnf(protocol.CodeNoPlaybooks, rel, "the playbooks directory %s holds no <name>.md playbook", rel)
	}
}

// regular reports whether a package-relative path is a regular file, a
// link to one included: install copies what a link points to.
func (c *checker) regular(rel string) bool {
	st, err := os.Stat(filepath.Join(c.dir, filepath.FromSlash(rel)))
	return err == nil && st.Mode().IsRegular()
}

// conflicts reports each name the package declares that Open Conduit, a
// served first-party package or a package beside it already registers. A
// package named like a served or bundled one replaces it, so that one's
// names are not taken.
func (c *checker) conflicts() {
	set := []discover.Package{{Name: c.m.Name, Manifest: c.m}}
	taken := map[string]bool{c.m.Name: true}
	for _, p := range c.opts.Beside {
		if !taken[p.Name] && p.Manifest != nil {
			taken[p.Name] = true
			set = append(set, p)
		}
	}
	for name, m := range c.opts.Served {
		if !taken[name] && m != nil {
			taken[name] = true
			set = append(set, discover.Package{Name: name, Manifest: m, HostRun: true})
		}
	}
	var ce *discover.ConflictError
	if !errors.As(discover.CheckConflicts(set), &ce) {
		return
	}
	for _, k := range ce.Conflicts {
		if !ownedBy(k, c.m.Name) {
			continue
		}
		c.rep.errorf(protocol.CodeRegistrationConflict, protocol.ManifestFile,
			"%s: rename it in the package's declarations", k.String())
	}
}

// ownedBy reports whether the package and someone else claim the name. A
// name the package declares twice is the manifest rules' finding.
func ownedBy(k discover.Conflict, name string) bool {
	own, other := false, false
	for _, o := range k.Owners {
		own = own || o == name
		other = other || o != name
	}
	return own && other
}
