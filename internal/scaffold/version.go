package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// ModulePath is Open Conduit's module: what a new package requires, and
// the main package its tool directive names.
const ModulePath = "github.com/open-conduit/open-conduit"

// replacedVersion is the version a package requires when a replace
// directive decides what it builds against; the go command reads no
// version from it.
const replacedVersion = "v0.0.0-00010101000000-000000000000"

// ErrUnknownVersion says a build cannot name a published version of Open
// Conduit to require: a development build without version control
// information, or one built from a modified checkout.
var ErrUnknownVersion = errors.New("this open-conduit build cannot name the Open Conduit version it was built from")

// semver is the shape of a module version the go command accepts in a
// require line: vMAJOR.MINOR.PATCH with an optional pre-release, no build
// metadata (a "+dirty" build is not a published version).
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// RequireVersion is the version of Open Conduit a new package requires:
// the running binary's own. release is the version stamped into a release
// build ("dev" or empty when none was); otherwise the build information
// decides: the module's version when the binary was built from the module
// cache (go install, go tool), else the commit a development build was
// built from, as a pseudo-version. It returns ErrUnknownVersion, wrapped
// with the reason, when none of those is known.
func RequireVersion(info *debug.BuildInfo, release string) (string, error) {
	if release != "" && release != "dev" {
		v := release
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		if semver.MatchString(v) {
			return v, nil
		}
	}
	if info == nil {
		return "", unknown("the binary carries no build information")
	}
	if info.Main.Path == ModulePath && semver.MatchString(info.Main.Version) {
		return info.Main.Version, nil
	}
	var revision, stamp, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			stamp = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	t, err := time.Parse(time.RFC3339, stamp)
	switch {
	case revision == "" || err != nil:
		return "", unknown("it was built without version control information (-buildvcs=false, or outside a git checkout)")
	case modified == "true":
		return "", unknown("it was built from a checkout with uncommitted changes, which no published commit holds")
	case len(revision) < 12:
		return "", unknown("its recorded commit is too short to name")
	}
	return PseudoVersion(t, revision), nil
}

// PseudoVersion is the go command's version for a commit with no tagged
// release: v0.0.0-<UTC commit time>-<the revision's first 12 digits>.
func PseudoVersion(commit time.Time, revision string) string {
	return "v0.0.0-" + commit.UTC().Format("20060102150405") + "-" + revision[:12]
}

// unknown is ErrUnknownVersion with its reason and what to do instead.
func unknown(reason string) error {
	return fmt.Errorf("%w: %s; pass --replace DIR naming an Open Conduit checkout to build against", ErrUnknownVersion, reason)
}
