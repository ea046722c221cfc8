// Package devloop is the author's watch loop behind `open-conduit extension
// dev`: it builds a package, installs it into a throwaway config with a
// generated scope, runs a daemon on that config with its state in a new
// temporary directory, and on every change to the source rebuilds the
// package and restarts it on the same state, so what it stored stays.
// Interrupted, it stops the daemon, kills whatever its packages left
// running, and removes the temporary directory.
//
// Layout of the temporary directory:
//
//	build/               the Go binary and the staged layouts
//	config/config.json   the generated config
//	config/extensions/   the installed package
//	secrets/             --secret values given inline, owner-only
//	state/               the daemon's state
//	daemon.log           the daemon's log
package devloop

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

// restartWait bounds how long a rebuild waits for the package's new
// process to answer its handshake.
const restartWait = client.MaxWait

// CheckFunc validates a config file's text offline, as `open-conduit
// config check --config FILE` does, against the packages installed beside
// the file.
type CheckFunc func(ctx context.Context, text []byte, configFile string) client.Validation

// Options is what one dev run works on.
type Options struct {
	// Dir is the package's source directory.
	Dir string
	// Entries are the generated entries' configs by type ({} for a type
	// not named).
	Entries map[string]jsontext.Value
	// Secrets are the scope's secrets by name: env:VAR, or a value.
	Secrets map[string]string
	// Self is the open-conduit executable the daemon runs as.
	Self string
	// Check is config check's validation.
	Check CheckFunc
	// Installer installs each build into the run's config directory (its
	// Dir is set by Run), with the checks extension install makes.
	Installer packages.Installer
	// Out gets what the author reads: where things are, each rebuild.
	Out io.Writer
	// Started, when set, is called once the package first runs (tests).
	Started func(Paths)
}

// Paths are where a dev run keeps things.
type Paths struct {
	Root       string
	Build      string
	ConfigFile string
	Extensions string
	State      string
	DaemonLog  string
	Secrets    string
}

func pathsUnder(root string) Paths {
	return Paths{
		Root:       root,
		Build:      filepath.Join(root, "build"),
		ConfigFile: filepath.Join(root, "config", "config.json"),
		Extensions: filepath.Join(root, "config", "extensions"),
		State:      filepath.Join(root, "state"),
		DaemonLog:  filepath.Join(root, "daemon.log"),
		Secrets:    filepath.Join(root, "secrets"),
	}
}

// ConfigRefusedError is a generated config config check refuses.
type ConfigRefusedError struct {
	// Problems are every problem the check found.
	Problems []client.Problem
	// Config is the generated config's text.
	Config []byte
}

func (e *ConfigRefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the generated config does not pass config check:\n")
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "  %s %s: %s (%s)\n", p.Severity, p.Path, p.Message, p.Code)
	}
	fmt.Fprintf(&b, "the generated config:\n%s", e.Config)
	b.WriteString("give each entry's config with --entry TYPE=JSON")
	return b.String()
}

// Run runs the loop until ctx ends (Ctrl-C or SIGTERM), then cleans up.
// An error before the package first runs (a bad directory, a failed first
// build, a refused config, a daemon that did not start) ends it after the
// same cleanup.
func Run(ctx context.Context, o Options) (err error) {
	src, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	if _, err := KindOf(src); err != nil {
		return err
	}
	root, err := tempRoot()
	if err != nil {
		return err
	}
	p := pathsUnder(root)
	var d *daemon
	defer func() {
		if d != nil {
			if killed := d.stop(); len(killed) > 0 {
				fmt.Fprintf(o.Out, "killed %d process(es) the package left running: %v\n", len(killed), killed)
			}
		}
		if ctx.Err() != nil {
			// Interrupted while starting: a build or a wait cut short is
			// the interrupt, not a failure.
			err = nil
		}
		if rmErr := os.RemoveAll(root); rmErr != nil && err == nil {
			err = fmt.Errorf("removing %s: %w", root, rmErr)
		}
	}()
	fmt.Fprintf(o.Out, "building %s\n", src)
	l, err := build(ctx, src, p.Build)
	if err != nil {
		return err
	}
	name := l.Manifest.Name
	in := o.Installer
	in.Dir = p.Extensions
	if err := install(ctx, &in, l, false); err != nil {
		return err
	}
	cfg, err := generate(l.Manifest, o.Entries, o.Secrets, p.Secrets)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.ConfigFile, cfg, 0o600); err != nil {
		return err
	}
	if res := o.Check(ctx, cfg, p.ConfigFile); !res.OK {
		return &ConfigRefusedError{Problems: res.Problems, Config: cfg}
	}
	if d, err = startDaemon(o.Self, p.ConfigFile, p.State, p.DaemonLog); err != nil {
		return err
	}
	x, err := d.waitRunning(ctx, name)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(p.DaemonLog, x.Log))
	}
	printReady(o.Out, p, l.Manifest, x)
	if o.Started != nil {
		o.Started(p)
	}
	return loop(ctx, o, src, p, d, cfg, name)
}

// maxSocketPath is the longest socket path a Unix domain socket takes
// (sun_path is 108 bytes on Linux, 104 on the BSDs), with room to spare.
const maxSocketPath = 100

// tempRoot makes the run's directory in the temporary directory, or in /tmp
// when the daemon's socket would not fit under a long TMPDIR.
func tempRoot() (string, error) {
	root, err := os.MkdirTemp("", "oc-dev-")
	if err != nil {
		return "", err
	}
	if len(filepath.Join(pathsUnder(root).State, client.SocketName)) <= maxSocketPath {
		return root, nil
	}
	_ = os.Remove(root)
	return os.MkdirTemp("/tmp", "oc-dev-")
}

// loop rebuilds on each change until ctx ends.
func loop(ctx context.Context, o Options, src string, p Paths, d *daemon, cfg []byte, name string) error {
	w, err := newWatcher(src)
	if err != nil {
		return fmt.Errorf("watching %s: %w", src, err)
	}
	changes := make(chan struct{}, 1)
	errs := make(chan error, 1)
	go w.run(ctx, changes, errs)
	fmt.Fprintf(o.Out, "watching %s for changes; Ctrl-C stops\n", src)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(o.Out, "stopping the daemon")
			return nil
		case err := <-errs:
			fmt.Fprintf(o.Out, "watch: %v\n", err)
		case <-d.done:
			return fmt.Errorf("the daemon exited; its log is %s\n%s", p.DaemonLog, tail(p.DaemonLog, ""))
		case <-changes:
			cfg = rebuild(ctx, o, src, p, d, cfg, name)
		}
	}
}

// rebuild builds the package again and, when that works, swaps it in and
// restarts it on the same state; it prints one line saying how it went
// and returns the config now live. A build that fails leaves the running
// package as it was.
func rebuild(ctx context.Context, o Options, src string, p Paths, d *daemon, cfg []byte, name string) []byte {
	stamp := time.Now().Format("15:04:05")
	l, err := build(ctx, src, p.Build)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(o.Out, "%s rebuild failed; %s keeps running as it was:\n%v\n", stamp, name, err)
		}
		return cfg
	}
	if l.Manifest.Name != name {
		_ = os.RemoveAll(l.Dir)
		fmt.Fprintf(o.Out, "%s rebuild failed: the package is now named %q, not %q; restart dev to run it under its new name\n", stamp, l.Manifest.Name, name)
		return cfg
	}
	next, err := generate(l.Manifest, o.Entries, o.Secrets, p.Secrets)
	if err != nil {
		_ = os.RemoveAll(l.Dir)
		fmt.Fprintf(o.Out, "%s rebuild failed; %s keeps running as it was: %v\n", stamp, name, err)
		return cfg
	}
	in := o.Installer
	in.Dir = p.Extensions
	if err := install(ctx, &in, l, true); err != nil {
		fmt.Fprintf(o.Out, "%s rebuild failed: installing the new build: %v\n", stamp, err)
		return cfg
	}
	res, err := d.c.Restart(ctx, name, restartWait)
	switch x := res.Extension; {
	case ctx.Err() != nil:
		return cfg
	case err != nil:
		fmt.Fprintf(o.Out, "%s rebuild ok, restart failed: %v\n", stamp, err)
	case x.State != "running":
		fmt.Fprintf(o.Out, "%s rebuild ok, restart failed: %s is %s (%s) %s; log: %s\n", stamp, name, x.State, x.Code, firstLine(x.LastError), x.Log)
	default:
		fmt.Fprintf(o.Out, "%s rebuild ok: %s restarted, pid %d\n", stamp, name, x.PID)
	}
	if string(next) != string(cfg) {
		cfg = applyConfig(ctx, o.Out, d, p, next, cfg)
	}
	return cfg
}

// applyConfig applies a regenerated config (the package's entry types
// changed) to the running daemon; a refused one leaves the live one.
func applyConfig(ctx context.Context, out io.Writer, d *daemon, p Paths, next, cur []byte) []byte {
	res, err := d.c.ApplyConfig(ctx, next)
	if err != nil || (!res.Applied && !res.Unchanged) {
		fmt.Fprintf(out, "the regenerated config was not applied; the running one stays:\n")
		if err != nil {
			fmt.Fprintf(out, "  %v\n", err)
		}
		for _, pr := range res.Problems {
			fmt.Fprintf(out, "  %s %s: %s (%s)\n", pr.Severity, pr.Path, pr.Message, pr.Code)
		}
		for _, rf := range res.Refused {
			fmt.Fprintf(out, "  refused by %s: %s (%s)\n", rf.Extension, firstLine(rf.Message), rf.Code)
		}
		return cur
	}
	fmt.Fprintf(out, "applied the regenerated config (generation %d), written to %s\n", res.Generation, p.ConfigFile)
	return next
}

// printReady says where things are and how to call each operation.
func printReady(w io.Writer, p Paths, m *protocol.Manifest, x client.Extension) {
	st := shellQuote(p.State)
	fmt.Fprintf(w, "%s %s running, pid %d\n", m.Name, m.Version, x.PID)
	fmt.Fprintf(w, "  state:       %s\n", p.State)
	fmt.Fprintf(w, "  config:      %s\n", p.ConfigFile)
	fmt.Fprintf(w, "  daemon log:  %s\n", p.DaemonLog)
	fmt.Fprintf(w, "  package log: %s\n", x.Log)
	for _, op := range m.Provides.Operations {
		if op.Kind != "" && op.Kind != "handler" {
			continue
		}
		fmt.Fprintf(w, "call %s:\n  open-conduit extension call --state %s%s %s %s --input %s\n",
			op.Name, st, scopeFlag(m), m.Name, op.Name, shellQuote(sampleInput(op.Input)))
	}
	fmt.Fprintf(w, "follow its log:\n  open-conduit logs --state %s %s --follow\n", st, m.Name)
}

// scopeFlag is the --scope a call of m's operations acts in: the generated
// scope, which uses m only through its entries, so none for a package that
// declares no extension types (the call would be refused: the scope does
// not use it).
func scopeFlag(m *protocol.Manifest) string {
	if len(m.Provides.Extensions) == 0 {
		return ""
	}
	return " --scope " + Scope
}

// sampleInput is an input object naming each property of an operation's
// input schema with an empty value of its type, for the author to fill.
func sampleInput(schema jsontext.Value) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(s.Properties))
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		typ, _ := s.Properties[name].Type.(string)
		val := map[string]string{"string": `""`, "integer": "0", "number": "0", "boolean": "false", "array": "[]", "object": "{}"}[typ]
		if val == "" {
			val = "null"
		}
		parts = append(parts, fmt.Sprintf("%q:%s", name, val))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// tail is the end of the daemon's log, and of the package's when known,
// for a start that failed.
func tail(daemonLog, pkgLog string) string {
	var b strings.Builder
	for _, f := range []string{daemonLog, pkgLog} {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "--- the end of %s:\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

// firstLine is s cut to its first line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
