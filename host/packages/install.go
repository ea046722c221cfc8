package packages

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
)

// Installer-owned directories under <config dir>/extensions. Discovery
// skips every directory starting with a dot, so the daemon never runs a
// half-copied package or a kept release.
const (
	StagingDir  = ".staging"
	PreviousDir = ".previous"
)

// Sentinels of the installer's refusals; match with errors.Is. Their codes
// are the host's diagnostic codes, so protocol.Diagnose has the remedy.
var (
	// ErrInvalidArchive refuses a release archive (a bad digest, a path
	// escaping the package directory, a link or special file, more than one
	// top-level entry, over a size bound).
	ErrInvalidArchive = &protocol.Error{Code: protocol.CodeInvalidArchive, Message: "invalid archive"}
	// ErrInstallState refuses installing over an installed package, and
	// changing one that is not installed.
	ErrInstallState = &protocol.Error{Code: protocol.CodeInstallState, Message: "install state"}
	// ErrInstallWrongPlatform refuses a command built for another OS or
	// architecture.
	ErrInstallWrongPlatform = &protocol.Error{Code: protocol.CodeWrongPlatform, Message: "wrong platform"}
	// ErrInstallConflict refuses a package that claims a name the host or
	// another package registers.
	ErrInstallConflict = &protocol.Error{Code: protocol.CodeRegistrationConflict, Message: "registration conflict"}
	// ErrInstallInvalidPackage refuses a directory discovery would skip.
	ErrInstallInvalidPackage = &protocol.Error{Code: protocol.CodeInvalidPackage, Message: "invalid package"}
)

// Installer changes the packages installed under one config directory:
// Dir is <config dir>/extensions. Bundled and Served are the other
// packages the daemon runs, so a conflict is judged over the set the
// daemon would discover after the change.
type Installer struct {
	// Dir is <config dir>/extensions.
	Dir string
	// Bundled is the extensions directory beside the binary.
	Bundled string
	// Served are the manifests of the packages the binary serves itself.
	Served map[string]*protocol.Manifest
	// HTTP fetches archive URLs; nil uses http.DefaultClient.
	HTTP *http.Client
	// Limits bound an archive and a copied directory; zero uses
	// DefaultLimits.
	Limits Limits
}

// Limits bound what an install reads, so a zip bomb or a symbolic link
// loop stops instead of filling the disk.
type Limits struct {
	// Bytes bounds the total size of the files (and, for a URL, of the
	// download).
	Bytes int64
	// Entries bounds the number of files and directories.
	Entries int
}

// DefaultLimits are 1 GiB and 10,000 entries.
var DefaultLimits = Limits{Bytes: 1 << 30, Entries: 10000}

func (in *Installer) limits() Limits {
	l := in.Limits
	if l.Bytes <= 0 {
		l.Bytes = DefaultLimits.Bytes
	}
	if l.Entries <= 0 {
		l.Entries = DefaultLimits.Entries
	}
	return l
}

// Source is what to install: a package directory, or a release archive
// (a .tar.gz path or an http(s) URL to one).
type Source struct {
	// Path is the directory, archive file or URL.
	Path string
	// SHA256 is the archive's expected digest in hex; empty checks none,
	// which a plain http URL is refused for.
	SHA256 string
}

// IsArchive reports whether the source names an archive rather than a
// directory: a URL, or a path to anything but a directory.
func (s Source) IsArchive() bool {
	if isURL(s.Path) {
		return true
	}
	st, err := os.Stat(s.Path)
	return err == nil && !st.IsDir()
}

// Result is the release an install, update or rollback left installed.
type Result struct {
	Name string `json:"name"`
	// Dir is where the package now lives.
	Dir      string             `json:"dir"`
	Manifest *protocol.Manifest `json:"manifest"`
	// ReplacesBundled is set when the installed package replaces a bundled
	// or served package of its name.
	ReplacesBundled bool `json:"replaces_bundled,omitzero"`
	// Kept is the release kept for rollback, nil when none is.
	Kept *protocol.Manifest `json:"kept,omitempty"`
	// SHA256 is the archive's digest when the release came from one.
	SHA256 string `json:"sha256,omitempty"`
}

// Install installs a package that is not installed yet. It refuses
// (nothing changed) a package discovery would skip, one for another
// platform, one whose names conflict with the host's or another
// package's, and one already installed (install_state: use Update).
func (in *Installer) Install(ctx context.Context, src Source) (Result, error) {
	return in.put(ctx, src, false)
}

// Update replaces an installed package with a new release under the same
// checks as Install, refusing a lower kv_version than the installed
// release's (kv_downgrade). The replaced release is kept as
// .previous/<name> for Rollback; an older kept release is deleted.
func (in *Installer) Update(ctx context.Context, src Source) (Result, error) {
	return in.put(ctx, src, true)
}

func (in *Installer) put(ctx context.Context, src Source, update bool) (Result, error) {
	if err := in.prepareDirs(); err != nil {
		return Result{}, err
	}
	stage, err := in.newStage()
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(stage)
	dir, digest, err := in.stageSource(ctx, src, stage)
	if err != nil {
		return Result{}, err
	}
	pkg, err := in.checkStaged(dir)
	if err != nil {
		return Result{}, err
	}
	res := Result{Name: pkg.Name, Dir: in.current(pkg.Name), Manifest: pkg.Manifest, SHA256: digest, ReplacesBundled: pkg.Replaces}
	old, installed := in.installedManifest(pkg.Name)
	switch {
	case !update && installed:
		return Result{}, protocol.Errorf(ErrInstallState,
			"%s is already installed in %s: use 'open-conduit extension update' to replace it", pkg.Name, in.Dir)
	case update && !installed:
		return Result{}, protocol.Errorf(ErrInstallState,
			"%s is not installed in %s: use 'open-conduit extension install' to add it", pkg.Name, in.Dir)
	case update && old != nil && pkg.Manifest.KVVersion < old.KVVersion:
		return Result{}, protocol.Errorf(protocol.ErrKVDowngrade,
			"%s %s declares kv_version %d, lower than the installed release's %d: a KV layout never goes down; install a release with kv_version %d or higher",
			pkg.Name, versionText(pkg.Manifest), pkg.Manifest.KVVersion, old.KVVersion, old.KVVersion)
	}
	if !update {
		return res, in.rename(dir, res.Dir)
	}
	if err := in.keepCurrent(pkg.Name, stage); err != nil {
		return Result{}, err
	}
	if err := in.rename(dir, res.Dir); err != nil {
		// Put the running release back where it was.
		_ = os.Rename(in.previous(pkg.Name), res.Dir)
		return Result{}, err
	}
	res.Kept = old
	return res, nil
}

// stageSource lays the source out as a package directory inside stage and
// returns its path, and the archive's digest when it was one.
func (in *Installer) stageSource(ctx context.Context, src Source, stage string) (dir, digest string, err error) {
	if src.IsArchive() {
		return in.stageArchive(ctx, src, stage)
	}
	if src.SHA256 != "" {
		return "", "", fmt.Errorf("--sha256 checks an archive, but %s is a directory: drop --sha256", src.Path)
	}
	abs, err := filepath.Abs(src.Path)
	if err != nil {
		return "", "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", "", fmt.Errorf("reading the package %s: %w", src.Path, err)
	}
	if !st.IsDir() {
		return "", "", fmt.Errorf("%s is not a package directory or a .tar.gz archive", src.Path)
	}
	dir = filepath.Join(stage, filepath.Base(abs))
	if err := copyPackage(abs, dir, in.limits()); err != nil {
		return "", "", err
	}
	return dir, "", nil
}

// checkStaged checks a staged package as the daemon would at discovery,
// plus its platform and the names it registers against the set the daemon
// would run once it is in place.
func (in *Installer) checkStaged(dir string) (discover.Package, error) {
	pkg, err := discover.Load(dir, discover.Installed, in.Served)
	if err != nil {
		var p *discover.Problem
		if errors.As(err, &p) {
			msg := strings.Replace(p.Message, dir, filepath.Base(dir), 1)
			return discover.Package{}, &protocol.Error{Code: p.Code, Message: fmt.Sprintf("%s: %s", filepath.Base(dir), msg)}
		}
		return discover.Package{}, err
	}
	if !pkg.HostRun {
		if err := CheckPlatform(filepath.Join(dir, pkg.Manifest.Command[0])); err != nil {
			var pe *PlatformError
			if errors.As(err, &pe) {
				return discover.Package{}, protocol.Errorf(ErrInstallWrongPlatform,
					"%s: its command %s is built for %s, but this host is %s: build it for this platform, or install the release built for it",
					pkg.Name, pkg.Manifest.Command[0], platformText(pe.Built), pe.Want)
			}
			return discover.Package{}, err
		}
	}
	pkg.Replaces, err = in.checkConflicts(pkg)
	return pkg, err
}

func platformText(p Platform) string {
	if p.OS == "" {
		return "no platform this host knows"
	}
	return p.String()
}

// checkConflicts checks the set the daemon would discover with pkg
// installed: pkg takes the place of an installed, bundled or served package
// of its name, which is a replacement, not a conflict.
// It reports whether pkg replaces a bundled or served package.
func (in *Installer) checkConflicts(pkg discover.Package) (replaces bool, err error) {
	found, _ := discover.Discover(discover.Options{Installed: in.Dir, Bundled: in.Bundled, Served: in.Served})
	set := []discover.Package{pkg}
	for _, p := range found {
		if p.Name == pkg.Name {
			replaces = p.Source == discover.Bundled || p.Replaces
			continue
		}
		set = append(set, p)
	}
	err = discover.CheckConflicts(set)
	var ce *discover.ConflictError
	if errors.As(err, &ce) {
		return false, protocol.Errorf(ErrInstallConflict, "%s", strings.TrimPrefix(ce.Error(), protocol.CodeRegistrationConflict+": "))
	}
	return replaces, err
}

// installedManifest reads the installed release of name, if any. A
// release whose manifest no longer parses is installed, with no manifest.
func (in *Installer) installedManifest(name string) (*protocol.Manifest, bool) {
	return readManifest(in.current(name))
}

func readManifest(dir string) (*protocol.Manifest, bool) {
	if _, err := os.Lstat(dir); err != nil {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dir, protocol.ManifestFile))
	if err != nil {
		return nil, true
	}
	m, err := protocol.ParseManifest(data)
	if err != nil {
		return nil, true
	}
	return m, true
}

// Rollback swaps the kept release of name back in; the release it replaces
// becomes the kept one, so a second rollback is the update again. With no
// kept release it is refused (install_state). The daemon refuses the older
// release at start (kv_downgrade) when the newer one already migrated the
// package's KV layout.
func (in *Installer) Rollback(name string) (Result, error) {
	if err := checkName(name); err != nil {
		return Result{}, err
	}
	if err := in.prepareDirs(); err != nil {
		return Result{}, err
	}
	prev, cur := in.previous(name), in.current(name)
	if _, err := os.Lstat(prev); err != nil {
		return Result{}, protocol.Errorf(ErrInstallState,
			"no release of %s is kept for rollback (an update keeps the release it replaces in %s)", name, filepath.Join(in.Dir, PreviousDir))
	}
	stage, err := in.newStage()
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(stage)
	// Check the kept release where it will run: a directory named after it.
	check := filepath.Join(stage, name)
	if err := os.Rename(prev, check); err != nil {
		return Result{}, err
	}
	pkg, err := in.checkStaged(check)
	if err != nil {
		_ = os.Rename(check, prev)
		return Result{}, err
	}
	old, installed := in.installedManifest(name)
	if installed {
		if err := os.Rename(cur, prev); err != nil {
			_ = os.Rename(check, prev)
			return Result{}, err
		}
	}
	if err := os.Rename(check, cur); err != nil {
		_ = os.Rename(prev, cur)
		return Result{}, err
	}
	return Result{Name: name, Dir: cur, Manifest: pkg.Manifest, ReplacesBundled: pkg.Replaces, Kept: old}, nil
}

// Removed is what Remove deleted.
type Removed struct {
	Name string `json:"name"`
	// Dirs are the directories deleted: the package and its kept release.
	Dirs []string `json:"dirs"`
}

// Remove deletes an installed package and its kept release, never its
// durable state (its KV and recorded layout in the store, its state
// directory, its log), so reinstalling resumes from them. Whether the
// config still uses the package is the caller's to check first (Uses).
func (in *Installer) Remove(name string) (Removed, error) {
	if err := checkName(name); err != nil {
		return Removed{}, err
	}
	if err := in.prepareDirs(); err != nil {
		return Removed{}, err
	}
	if _, installed := in.installedManifest(name); !installed {
		return Removed{}, protocol.Errorf(ErrInstallState,
			"%s is not installed in %s: 'open-conduit extension list' shows what is", name, in.Dir)
	}
	stage, err := in.newStage()
	if err != nil {
		return Removed{}, err
	}
	defer os.RemoveAll(stage)
	out := Removed{Name: name}
	// Renamed away first, so discovery never sees a half-deleted package.
	for i, dir := range []string{in.current(name), in.previous(name)} {
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if err := os.Rename(dir, filepath.Join(stage, fmt.Sprint(i))); err != nil {
			return out, err
		}
		out.Dirs = append(out.Dirs, dir)
	}
	return out, nil
}

// Kept is the manifest of the release kept for rollback of name; found is
// false when none is kept.
func (in *Installer) Kept(name string) (m *protocol.Manifest, found bool) {
	return readManifest(in.previous(name))
}

func (in *Installer) current(name string) string  { return filepath.Join(in.Dir, name) }
func (in *Installer) previous(name string) string { return filepath.Join(in.Dir, PreviousDir, name) }

// keepCurrent moves the installed release of name to .previous/<name>,
// deleting an older kept one.
func (in *Installer) keepCurrent(name, stage string) error {
	prev := in.previous(name)
	if _, err := os.Lstat(prev); err == nil {
		if err := os.Rename(prev, filepath.Join(stage, "older-kept")); err != nil {
			return err
		}
	}
	return os.Rename(in.current(name), prev)
}

// rename moves a checked package into place.
func (in *Installer) rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("moving the package into %s: %w", to, err)
	}
	return nil
}

// newStage makes a fresh directory under .staging for one change.
func (in *Installer) newStage() (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	dir := filepath.Join(in.Dir, StagingDir, hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the staging directory: %w", err)
	}
	return dir, nil
}

// prepareDirs creates the config directory, extensions/, .staging and
// .previous owner-only, refusing any of them that another user owns or may
// write: the daemon would refuse to run what is in it.
func (in *Installer) prepareDirs() error {
	if in.Dir == "" {
		return errors.New("no installed-packages directory given")
	}
	config := filepath.Dir(in.Dir)
	for _, d := range []string{config, in.Dir, filepath.Join(in.Dir, StagingDir), filepath.Join(in.Dir, PreviousDir)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			if errors.Is(err, fs.ErrNotExist) && d == config {
				if err := os.MkdirAll(d, 0o700); err != nil {
					return fmt.Errorf("creating the config directory %s: %w", d, err)
				}
				continue
			}
			return fmt.Errorf("creating %s: %w", d, err)
		}
		if err := ownDir(d); err != nil {
			return err
		}
	}
	return nil
}

// ownDir refuses a directory that is a link, not a directory, owned by
// another user, or writable by its group or others.
func ownDir(d string) error {
	st, err := os.Lstat(d)
	if err != nil {
		return err
	}
	uid := os.Getuid()
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory (a symbolic link or a file): the installer uses only a real directory there; move it away", d)
	case fileOwner(st) != uid:
		return fmt.Errorf("%s is owned by user %d, not by you (user %d): the daemon would run what another user could change. Pass a --config in a directory you own, or have it removed", d, fileOwner(st), uid)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s can be written by its group or others (mode %04o): run 'chmod go-w %s'", d, st.Mode().Perm(), d)
	}
	return nil
}

// checkName refuses a name that is not one package directory's.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `/\`) {
		return protocol.Errorf(ErrInstallState, "%q is not a package name: give the name 'open-conduit extension list' shows", name)
	}
	return nil
}

func versionText(m *protocol.Manifest) string {
	if m.Version == "" {
		return "(no version)"
	}
	return m.Version
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}
