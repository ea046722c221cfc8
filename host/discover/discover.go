// Package discover finds the extension packages a daemon runs: installed
// ones in <config dir>/extensions/<name>/, bundled ones beside the binary,
// and the first-party ones the binary serves itself. It reads manifests
// strictly and offline, reports what it skips and why, and checks a whole
// set for conflicting names at once.
package discover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// Source says where a package was found.
type Source string

// Sources.
const (
	Installed Source = "installed"
	Bundled   Source = "bundled"
)

// Package is one discovered package.
type Package struct {
	Name     string
	Dir      string
	Manifest *protocol.Manifest
	Source   Source
	// HostRun marks a package the daemon's own executable serves.
	HostRun bool
	// Replaces is set when an installed package replaces a bundled one.
	Replaces bool
}

// Problem is a package that was skipped, and why.
type Problem struct {
	Dir     string `json:"dir"`
	Name    string `json:"name,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p Problem) Error() string { return fmt.Sprintf("%s: %s (%s)", p.Dir, p.Message, p.Code) }

// Options says where to look.
type Options struct {
	// Installed is <config dir>/extensions; missing means none.
	Installed string
	// Bundled is the extensions directory beside the binary; missing means
	// none beyond the served ones.
	Bundled string
	// Served lists the first-party packages the binary serves itself, with
	// their manifests (answered in process, never read from a file). They
	// are bundled even when no directory holds them.
	Served map[string]*protocol.Manifest
}

// Discover finds every package. A package that fails a check is reported
// and skipped; an installed package replaces a bundled one of its name,
// even when the installed one is refused, so a release that needs a newer
// Open Conduit is reported rather than silently swapped for the bundled one.
func Discover(opts Options) ([]Package, []Problem) {
	var problems []Problem
	installed, names, ps := scan(opts.Installed, Installed, opts.Served)
	problems = append(problems, ps...)
	taken := map[string]bool{}
	for _, n := range names {
		taken[n] = true
	}
	var pkgs []Package
	pkgs = append(pkgs, installed...)
	bundled, _, ps := scan(opts.Bundled, Bundled, opts.Served)
	problems = append(problems, ps...)
	for _, p := range bundled {
		if taken[p.Name] {
			markReplace(pkgs, p.Name)
			continue
		}
		taken[p.Name] = true
		pkgs = append(pkgs, p)
	}
	served := make([]string, 0, len(opts.Served))
	for n := range opts.Served {
		served = append(served, n)
	}
	sort.Strings(served)
	for _, n := range served {
		if taken[n] {
			markReplace(pkgs, n)
			continue
		}
		taken[n] = true
		pkgs = append(pkgs, Package{Name: n, Manifest: opts.Served[n], Source: Bundled, HostRun: true})
	}
	return pkgs, problems
}

func markReplace(pkgs []Package, name string) {
	for i := range pkgs {
		if pkgs[i].Name == name && pkgs[i].Source == Installed {
			pkgs[i].Replaces = true
		}
	}
}

// scan reads every package directory under root. names are every
// directory name that looked like a package, refused or not.
func scan(root string, src Source, served map[string]*protocol.Manifest) (pkgs []Package, names []string, problems []Problem) {
	if root == "" {
		return nil, nil, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		if !os.IsNotExist(err) {
			problems = append(problems, Problem{Dir: root, Code: "invalid_package", Message: fmt.Sprintf("cannot read the directory: %v", err)})
		}
		return nil, nil, problems
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		names = append(names, e.Name())
		p, prob := load(dir, src, served)
		if prob != nil {
			problems = append(problems, *prob)
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, names, problems
}

// Load reads one package directory as discovery does.
func Load(dir string, src Source, served map[string]*protocol.Manifest) (Package, error) {
	p, prob := load(dir, src, served)
	if prob != nil {
		return Package{}, prob
	}
	return p, nil
}

func load(dir string, src Source, served map[string]*protocol.Manifest) (Package, *Problem) {
	base := filepath.Base(dir)
	data, err := os.ReadFile(filepath.Join(dir, protocol.ManifestFile))
	if err != nil {
		return Package{}, &Problem{Dir: dir, Name: base, Code: "invalid_package",
			Message: fmt.Sprintf("no readable %s: %v", protocol.ManifestFile, err)}
	}
	m, err := protocol.ParseAndValidateManifest(data)
	if err != nil {
		return Package{}, &Problem{Dir: dir, Name: base, Code: manifestCode(err), Message: manifestMessage(err)}
	}
	if m.Name != base {
		return Package{}, &Problem{Dir: dir, Name: base, Code: "invalid_package",
			Message: fmt.Sprintf("the directory is named %q but the manifest's name is %q; a package directory is named after its manifest", base, m.Name)}
	}
	p := Package{Name: m.Name, Dir: dir, Manifest: m, Source: src}
	if protocol.IsHostRun(m.Command, m.Name) {
		own, ok := served[m.Name]
		if !ok {
			return Package{}, &Problem{Dir: dir, Name: m.Name, Code: "not_served",
				Message: fmt.Sprintf("the manifest runs 'open-conduit extension-run %s', which this open-conduit does not serve", m.Name)}
		}
		// The host's own manifest, not the copy written at install, so an
		// upgraded binary updates the package without a reinstall.
		p.Manifest, p.HostRun = own, true
		return p, nil
	}
	exe := filepath.Join(dir, m.Command[0])
	st, err := os.Stat(exe)
	switch {
	case err != nil:
		return Package{}, &Problem{Dir: dir, Name: m.Name, Code: "invalid_package",
			Message: fmt.Sprintf("its command %s does not exist in the package", m.Command[0])}
	case st.IsDir() || st.Mode()&0o111 == 0:
		return Package{}, &Problem{Dir: dir, Name: m.Name, Code: "invalid_package",
			Message: fmt.Sprintf("its command %s is not an executable file", m.Command[0])}
	}
	return p, nil
}

// manifestCode is the code of a manifest discovery refuses: a field or
// permission from a newer release needs a newer host; a package sharing no
// protocol version with this host is incompatible (its remedy is another
// build of the package or of Open Conduit, not an edit); anything else is
// an invalid package.
func manifestCode(err error) string {
	if protocol.CodeOf(err) == protocol.CodeNeedsNewerHost {
		return protocol.CodeNeedsNewerHost
	}
	var me *protocol.ManifestError
	if errors.As(err, &me) && slices.ContainsFunc(me.Problems, func(p protocol.Problem) bool { return p.Rule == ruleProtocolVersion }) {
		return protocol.CodeIncompatibleProtocol
	}
	return "invalid_package"
}

// ruleProtocolVersion is the manifest rule broken by a protocol list that
// names no version this host speaks.
const ruleProtocolVersion = "protocol_version"

// manifestMessage lists a manifest's broken rules on one line, each with
// its JSON pointer and rule id, so the author can find and fix every one.
func manifestMessage(err error) string {
	var me *protocol.ManifestError
	if !errors.As(err, &me) || len(me.Problems) == 0 {
		return oneLine(err)
	}
	parts := make([]string, len(me.Problems))
	for i, p := range me.Problems {
		parts[i] = fmt.Sprintf("%s: %s [rule %s]", p.Path, p.Message, p.Rule)
	}
	return "manifest: " + strings.Join(parts, "; ")
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
