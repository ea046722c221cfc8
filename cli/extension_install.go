package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

// daemonWait bounds how long a command waits for the daemon to start or
// restart the package it changed.
const daemonWait = 30 * time.Second

// installer changes the packages installed beside the place's config file,
// judging conflicts against what this binary bundles and serves.
func installer(p place) *packages.Installer {
	return &packages.Installer{Dir: p.installed(), Bundled: bundledDir(), Served: served()}
}

const whereInstalled = "Packages are installed in extensions/<name>/ beside the config file (--config);\n" +
	"the installer keeps .staging/ and .previous/<name> there, which the daemon skips."

func extensionInstallCommand() *command {
	var sum string
	return &command{
		name:  "install",
		usage: "DIR|ARCHIVE",
		short: "install a package from its directory or a release archive",
		long: "Install a package that is not installed yet, from its directory or from a\n" +
			"release archive: a .tar.gz path or http(s) URL holding one package directory.\n" +
			"The package is checked as the daemon would (manifest, command, protocol\n" +
			"version, platform, names that conflict with Open Conduit's or another\n" +
			"package's; a package named like a bundled one replaces it), copied into a\n" +
			"staging directory (symbolic links resolved) and renamed into place, so a\n" +
			"refused or failed install changes nothing. A plain http URL needs --sha256.\n" +
			"Prints the permissions the package declares and the config entry that uses\n" +
			"it. A daemon running on --state starts it at once; otherwise it runs at the\n" +
			"next 'open-conduit serve'. Exits 1 when refused (the code says why).\n\n" + whereInstalled,
		minArgs: 1, maxArgs: 1,
		state: true, config: true, json: true,
		flags: func(fs *pflag.FlagSet) { sha256Flag(fs, &sum) },
		run: func(r *runner, args []string) error {
			return r.putPackage(args[0], sum, false)
		},
	}
}

func extensionUpdateCommand() *command {
	var sum string
	return &command{
		name:  "update",
		usage: "DIR|ARCHIVE",
		short: "replace an installed package with a new release",
		long: "Replace an installed package with a new release, from its directory or a release\n" +
			"archive, under install's checks. A release with a lower kv_version than the\n" +
			"installed one is refused (kv_downgrade). The replaced release is kept as\n" +
			".previous/<name> for 'open-conduit extension rollback' (one is kept). A daemon\n" +
			"running on --state restarts the package on the new release at once. Take a\n" +
			"backup first when the release raises kv_version: its KV is migrated at\n" +
			"configure, and there is no automatic downgrade. Exits 1 when refused.\n\n" + whereInstalled,
		minArgs: 1, maxArgs: 1,
		state: true, config: true, json: true,
		flags: func(fs *pflag.FlagSet) { sha256Flag(fs, &sum) },
		run: func(r *runner, args []string) error {
			return r.putPackage(args[0], sum, true)
		},
	}
}

func extensionRollbackCommand() *command {
	return &command{
		name:  "rollback",
		usage: "NAME",
		short: "swap the release kept by the last update back in",
		long: "Swap the release of NAME kept by the last update back in; the release it\n" +
			"replaces becomes the kept one, so a second rollback is the update again. If the\n" +
			"newer release already migrated the package's KV layout, the daemon refuses the\n" +
			"older one at start (kv_downgrade): roll forward, or restore a backup. A daemon\n" +
			"running on --state restarts the package on the kept release at once. Exits 1\n" +
			"when nothing is kept, or the daemon refuses the release.\n\n" + whereInstalled,
		minArgs: 1, maxArgs: 1,
		state: true, config: true, json: true,
		run: func(r *runner, args []string) error {
			res, err := installer(r.place).Rollback(args[0])
			if err != nil {
				return r.refused(err)
			}
			return r.reportPut("rolled back", res)
		},
	}
}

func extensionRemoveCommand() *command {
	var force bool
	return &command{
		name:  "remove",
		usage: "NAME",
		short: "remove an installed package and its kept release",
		long: "Remove an installed package and the release kept for its rollback. Refused while\n" +
			"the config file (--config) uses the package's types (an entry, a connection, a\n" +
			"route or a binding naming what it declares): each use is named; remove them\n" +
			"first, or pass --force. The package's durable state stays: its KV and layout in\n" +
			"the store, <state>/extensions/<name> and its log, so a reinstall resumes from\n" +
			"them; delete those directories yourself to purge. Exits 1 when refused.\n\n" + whereInstalled,
		minArgs: 1, maxArgs: 1,
		state: true, config: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &force, "force", "", "remove even while the config uses the package's types")
		},
		run: func(r *runner, args []string) error { return r.removePackage(args[0], force) },
	}
}

func sha256Flag(fs *pflag.FlagSet, sum *string) {
	fs.StringVar(sum, "sha256", "", "the archive's expected SHA-256 digest, 64 hex digits (needed for a plain http URL)")
}

// putOutcome is what install, update and rollback print.
type putOutcome struct {
	Action string `json:"action"`
	packages.Result
	Permissions []permission `json:"permissions"`
	// Next says what to do to use the package, one step a line.
	Next   []string      `json:"next,omitempty"`
	Daemon daemonOutcome `json:"daemon"`
}

// permission is one permission the release declares and what it allows.
type permission struct {
	Name   string `json:"name"`
	Allows string `json:"allows"`
}

// daemonOutcome says what the daemon on --state did about a change.
type daemonOutcome struct {
	// Running says a daemon answered.
	Running bool `json:"running"`
	// State is the package's state there, once the daemon acted.
	State string `json:"state,omitempty"`
	// Code is why the daemon does not run the package, when it does not.
	Code    string `json:"code,omitempty"`
	Remedy  string `json:"remedy,omitempty"`
	Message string `json:"message"`
}

// putPackage installs or updates from src.
func (r *runner) putPackage(src, sum string, update bool) error {
	if sum != "" {
		if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
			return usagef("--sha256 must be a SHA-256 digest: 64 hex digits")
		}
	}
	source := packages.Source{Path: src, SHA256: sum}
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		if _, err := os.Stat(src); err != nil {
			return usagef("%s: no such package directory or archive: give a directory, a .tar.gz path or an http(s) URL", src)
		}
		if sum != "" && !source.IsArchive() {
			return usagef("--sha256 checks an archive, but %s is a directory: drop --sha256", src)
		}
	}
	in := installer(r.place)
	put, action := in.Install, "installed"
	if update {
		put, action = in.Update, "updated"
	}
	res, err := put(r.ctx, source)
	if err != nil {
		return r.refused(err)
	}
	return r.reportPut(action, res)
}

// refused prints a refusal with its code for --json, and returns it as the
// command's error: its code, what is wrong and what to change.
func (r *runner) refused(err error) error {
	code := protocol.CodeOf(err)
	if code == "" {
		return err
	}
	d, _ := protocol.Diagnose(code)
	if r.asJSON {
		_ = printJSON(r.stdout, map[string]any{"error": map[string]string{"code": code, "message": err.Error(), "remedy": d.Remedy}})
	}
	return fmt.Errorf("%s: %s", code, err.Error())
}

func (r *runner) reportPut(action string, res packages.Result) error {
	out := putOutcome{Action: action, Result: res, Permissions: permissionsOf(res.Manifest)}
	if action == "installed" {
		out.Next = r.nextSteps(res.Manifest)
	}
	out.Daemon = r.tellDaemon(res.Name, action != "installed" || res.ReplacesBundled)
	if err := r.emit(out, func(w io.Writer) error { return writePut(w, out) }); err != nil {
		return err
	}
	if out.Daemon.Code != "" {
		return fmt.Errorf("%s %s on disk, but the running daemon does not run it: %s", action, res.Name, out.Daemon.Code)
	}
	return nil
}

func permissionsOf(m *protocol.Manifest) []permission {
	out := []permission{}
	for _, p := range m.Permissions {
		out = append(out, permission{Name: p, Allows: protocol.PermissionMeaning[p]})
	}
	return out
}

// nextSteps says how to use a newly installed package: the entry to add
// to a scope, and the check to run.
func (r *runner) nextSteps(m *protocol.Manifest) []string {
	check := "open-conduit config check --config " + shellQuote(r.place.ConfigFile)
	types := packages.EntryTypes(m)
	if len(types) == 0 {
		return []string{"it declares no entry type: nothing to add to the config", "check the config: " + check}
	}
	var steps []string
	for _, t := range types {
		steps = append(steps, fmt.Sprintf(`add an entry to a scope's "entries" in %s: {"name": "%s1", "type": "%s"}`, r.place.ConfigFile, t, t))
	}
	return append(steps, "check the config: "+check, "apply it to a running daemon: open-conduit config apply --config "+shellQuote(r.place.ConfigFile))
}

func writePut(w io.Writer, out putOutcome) error {
	m := out.Manifest
	fmt.Fprintf(w, "%s %s %s (protocol %s) in %s\n", out.Action, out.Name, dash(m.Version), intsText(m.Protocol), out.Dir)
	if out.SHA256 != "" {
		fmt.Fprintf(w, "archive sha256 %s\n", out.SHA256)
	}
	if out.ReplacesBundled {
		fmt.Fprintf(w, "it replaces the bundled %s\n", out.Name)
	}
	if out.Kept != nil {
		fmt.Fprintf(w, "kept %s for rollback ('open-conduit extension rollback %s' swaps it back)\n", dash(out.Kept.Version), out.Name)
		if out.Kept.KVVersion > m.KVVersion {
			fmt.Fprintf(w, "warning: %s declares kv_version %d, older than %d of the release it replaces: if that release migrated the KV layout, the daemon refuses this one (kv_downgrade); roll forward with the same rollback, or restore a backup\n",
				dash(m.Version), m.KVVersion, out.Kept.KVVersion)
		}
	}
	if len(out.Permissions) == 0 {
		fmt.Fprintln(w, "permissions: none (it uses only the surfaces it declares)")
	} else {
		fmt.Fprintln(w, "permissions it declares:")
		for _, p := range out.Permissions {
			fmt.Fprintf(w, "  %s: %s\n", p.Name, dash(p.Allows))
		}
	}
	for _, s := range out.Next {
		fmt.Fprintf(w, "next: %s\n", s)
	}
	fmt.Fprintf(w, "daemon: %s\n", out.Daemon.Message)
	if out.Daemon.Remedy != "" {
		fmt.Fprintf(w, "  remedy: %s\n", out.Daemon.Remedy)
	}
	return nil
}

func intsText(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return dash(strings.Join(parts, ","))
}

// removeOutcome is what remove prints.
type removeOutcome struct {
	packages.Removed
	// Uses are where the config used the package, when --force removed it
	// anyway.
	Uses   []packages.Use `json:"uses,omitempty"`
	Kept   []string       `json:"kept_state"`
	Daemon daemonOutcome  `json:"daemon"`
}

func (r *runner) removePackage(name string, force bool) error {
	uses, err := r.configUses(name)
	if err != nil {
		return err
	}
	if len(uses) > 0 && !force {
		return r.usesRefusal(name, uses)
	}
	removed, err := installer(r.place).Remove(name)
	if err != nil {
		return r.refused(err)
	}
	out := removeOutcome{Removed: removed, Uses: uses,
		Kept: []string{filepath.Join(r.place.State, "store") + " (its KV)", filepath.Join(r.place.State, "extensions", name), filepath.Join(r.place.State, "logs", "extensions", name+".log")}}
	out.Daemon = r.tellDaemon(name, false)
	return r.emit(out, func(w io.Writer) error {
		fmt.Fprintf(w, "removed %s: %s\n", name, strings.Join(removed.Dirs, ", "))
		for _, u := range uses {
			fmt.Fprintf(w, "warning: the config still uses it at %s (%s)\n", u.Path, u.Code)
		}
		fmt.Fprintf(w, "kept its durable state: %s\n", strings.Join(out.Kept, ", "))
		fmt.Fprintf(w, "daemon: %s\n", out.Daemon.Message)
		return nil
	})
}

// configUses lists where the config file uses the package's types,
// checked offline without it. A config file that does not exist uses
// nothing.
func (r *runner) configUses(name string) ([]packages.Use, error) {
	text, err := os.ReadFile(r.place.ConfigFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the config file to see whether it uses %s: %w", name, err)
	}
	return packages.Uses(r.ctx, text, r.place.ConfigFile, manifestsOf(discoverAt(r.place)), name), nil
}

func (r *runner) usesRefusal(name string, uses []packages.Use) error {
	if r.asJSON {
		_ = printJSON(r.stdout, map[string]any{"error": map[string]any{"code": "in_use", "uses": uses}})
	}
	where := make([]string, len(uses))
	for i, u := range uses {
		where[i] = u.Path
		if u.Line > 0 {
			where[i] = fmt.Sprintf("%s (line %d)", u.Path, u.Line)
		}
	}
	return fmt.Errorf("%s is in use: the config %s uses its types at %s: remove those from the config first, or pass --force to remove it anyway",
		name, r.place.ConfigFile, strings.Join(where, ", "))
}

// tellDaemon has a daemon answering on --state pick the change up: it
// rescans, and with restart restarts the package so its new release (or
// the bundled one it no longer replaces) serves. It says what happened in
// one line.
func (r *runner) tellDaemon(name string, restart bool) daemonOutcome {
	c := client.New(r.place.State)
	st, err := c.Status(r.ctx)
	switch {
	case errors.Is(err, client.ErrNoDaemon):
		return daemonOutcome{Message: "no daemon answers on " + r.place.State + ": the change applies at the next 'open-conduit serve'"}
	case err != nil:
		return daemonOutcome{Message: fmt.Sprintf("the daemon on %s could not be asked (%v): the change applies at its next start", r.place.State, err)}
	case filepath.Dir(st.ConfigFile) != filepath.Dir(r.place.ConfigFile):
		return daemonOutcome{Running: true, Message: fmt.Sprintf("the daemon on %s reads its packages beside %s, not this --config: it was not told", r.place.State, st.ConfigFile)}
	}
	res, err := c.Rescan(r.ctx)
	if err != nil {
		return daemonOutcome{Running: true, Message: fmt.Sprintf("the daemon did not rescan (%v): run 'open-conduit extension rescan' once it runs", err)}
	}
	for _, rf := range res.Refused {
		if rf.Extension == name {
			d, _ := protocol.Diagnose(rf.Code)
			return daemonOutcome{Running: true, Code: rf.Code, Remedy: d.Remedy, Message: "the running daemon refused it: " + firstLine(rf.Message)}
		}
	}
	switch {
	case restart || slices.Contains(res.Changed, name):
		return r.restartIn(c, name)
	case slices.Contains(res.Added, name):
		return r.awaitStart(c, name)
	case slices.Contains(res.Removed, name):
		return daemonOutcome{Running: true, Message: "the running daemon stopped it"}
	}
	return daemonOutcome{Running: true, Message: "the running daemon rescanned its packages"}
}

// restartIn restarts name in the daemon and says how it runs.
func (r *runner) restartIn(c *client.Client, name string) daemonOutcome {
	res, err := c.Restart(r.ctx, name, daemonWait)
	if err != nil {
		return daemonOutcome{Running: true, Message: fmt.Sprintf("the daemon did not restart it (%v): run 'open-conduit extension restart %s'", err, name)}
	}
	return outcomeOf(res.Extension, res.Done)
}

// awaitStart waits for the daemon's start of a package it just found.
func (r *runner) awaitStart(c *client.Client, name string) daemonOutcome {
	ctx, cancel := context.WithTimeout(r.ctx, daemonWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		exts, err := c.Extensions(ctx)
		if err == nil {
			for _, e := range exts.Extensions {
				if e.Name == name && (e.State == running || e.Code != "") {
					return outcomeOf(e, true)
				}
			}
		}
		select {
		case <-ctx.Done():
			return daemonOutcome{Running: true, Message: "the running daemon is starting it: 'open-conduit extension list' shows when it runs"}
		case <-tick.C:
		}
	}
}

func outcomeOf(e client.Extension, done bool) daemonOutcome {
	switch {
	case e.State == running:
		return daemonOutcome{Running: true, State: e.State, Message: fmt.Sprintf("the running daemon now serves %s %s (pid %d)", e.Name, dash(e.Version), e.PID)}
	case !done && e.Code == "":
		return daemonOutcome{Running: true, State: e.State, Message: fmt.Sprintf("the running daemon is starting %s: 'open-conduit extension list' shows when it runs", e.Name)}
	}
	return daemonOutcome{Running: true, State: e.State, Code: dash(e.Code), Remedy: e.Remedy,
		Message: fmt.Sprintf("the running daemon does not run %s %s: %s %s: %s", e.Name, dash(e.Version), e.State, dash(e.Code), dash(firstLine(e.LastError)))}
}

// listing is extension list's value: each package as the daemon (or, with
// none, discovery) sees it, with what its manifest on disk declares, then
// what discovery skipped and the conflicts in the set it found.
type listing struct {
	Extensions []listed            `json:"extensions"`
	Skipped    []client.Skipped    `json:"skipped,omitempty"`
	Conflicts  []discover.Conflict `json:"conflicts,omitempty"`
}

// listed is one package of extension list.
type listed struct {
	client.Extension `json:",inline"`
	// Protocols are the protocol versions its manifest lists.
	Protocols []int `json:"protocols,omitempty"`
	// Provides counts what it provides, by kind.
	Provides string `json:"provides,omitempty"`
	// Kept is the version of the release kept for rollback ("kept" when
	// that release names none).
	Kept string `json:"kept,omitempty"`
}

// listingOf adds to exts what discovery finds beside the place's config.
func listingOf(p place, exts client.Extensions) listing {
	pkgs, _ := discover.Discover(discover.Options{Installed: p.installed(), Bundled: bundledDir(), Served: served()})
	byName := map[string]discover.Package{}
	for _, pkg := range pkgs {
		byName[pkg.Name] = pkg
	}
	in := installer(p)
	l := listing{Skipped: exts.Skipped}
	for _, e := range exts.Extensions {
		x := listed{Extension: e}
		if pkg, ok := byName[e.Name]; ok {
			x.Protocols, x.Provides = pkg.Manifest.Protocol, packages.ProvidesSummary(pkg.Manifest)
		}
		if m, ok := in.Kept(e.Name); ok {
			x.Kept = "kept"
			if m != nil && m.Version != "" {
				x.Kept = m.Version
			}
		}
		l.Extensions = append(l.Extensions, x)
	}
	var ce *discover.ConflictError
	if errors.As(discover.CheckConflicts(pkgs), &ce) {
		l.Conflicts = ce.Conflicts
	}
	return l
}
