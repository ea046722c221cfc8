package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// running is the state of a package that serves.
const running = string(session.StateRunning)

// maxRestartWait bounds extension restart's --wait: the daemon holds an
// answer no longer than this.
const maxRestartWait = client.MaxWait

func extensionCommand() *command {
	return &command{
		name:  "extension",
		short: "packages: write, list, check, inspect, install, update, roll back, remove, call, restart and rescan them, run one while you build it (dev), and watch its JSON-RPC traffic (tap)",
		subs:  []*command{extensionNewCommand(), extensionListCommand(), extensionCallCommand(), extensionRestartCommand(), extensionRescanCommand(), extensionInstallCommand(), extensionUpdateCommand(), extensionRollbackCommand(), extensionRemoveCommand(), extensionCheckCommand(), extensionInspectCommand(), extensionDevCommand(), extensionTapCommand()},
	}
}

func extensionListCommand() *command {
	return &command{
		name:  "list",
		short: "list the packages, with their state when a daemon runs",
		long: "List the packages: from the running daemon (state, the state's code, pid,\n" +
			"restarts, permissions, log, last error) or, with no daemon, as discovery finds\n" +
			"them offline (installed beside the config file, bundled, served by this binary).\n" +
			"Each shows the protocol versions its manifest lists, what it provides, and the\n" +
			"release kept for rollback; then what discovery skipped and any name conflict.",
		state: true, config: true, json: true,
		run: func(r *runner, _ []string) error {
			exts, err := client.New(r.place.State).Extensions(r.ctx)
			if errors.Is(err, client.ErrNoDaemon) {
				exts = offlineExtensions(r.place)
				defer fmt.Fprintf(r.stderr, "offline: %v\n", err)
			} else if err != nil {
				return err
			}
			l := listingOf(r.place, exts)
			return r.emit(l, func(w io.Writer) error { return writeExtensions(w, l) })
		},
	}
}

// writeExtensions is extension list's table, then what discovery skipped
// and the name conflicts.
func writeExtensions(w io.Writer, l listing) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE\tSTATE\tCODE\tPID\tRESTARTS\tPROTOCOL\tPROVIDES\tPERMISSIONS\tKEPT\tLOG\tLAST ERROR")
	for _, e := range l.Extensions {
		pid := "-"
		if e.PID > 0 {
			pid = fmt.Sprint(e.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, dash(e.Version), e.Source, e.State, dash(e.Code),
			pid, e.Restarts, intsText(e.Protocols), dash(e.Provides), dash(strings.Join(e.Permissions, ",")), dash(e.Kept), dash(e.Log), dash(firstLine(e.LastError)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range l.Skipped {
		fmt.Fprintf(w, "skipped %s: %s (%s)\n", s.Dir, s.Message, s.Code)
	}
	for _, c := range l.Conflicts {
		fmt.Fprintf(w, "conflict: %s (%s)\n", c, protocol.CodeRegistrationConflict)
	}
	return nil
}

// offlineExtensions is what discovery finds with no daemon running; each
// log is where the daemon writes it, so an earlier run's log can be read.
func offlineExtensions(p place) client.Extensions {
	pkgs, problems := discover.Discover(discover.Options{Installed: p.installed(), Bundled: bundledDir(), Served: served()})
	dirs := config.Dirs{State: p.State}
	var out client.Extensions
	for _, pkg := range pkgs {
		out.Extensions = append(out.Extensions, client.Extension{Name: pkg.Name, Version: pkg.Manifest.Version,
			Title: pkg.Manifest.Title, Source: string(pkg.Source), HostRun: pkg.HostRun, Dir: pkg.Dir,
			State: "not running", Permissions: pkg.Manifest.Permissions, Log: dirs.ExtensionLog(pkg.Name)})
	}
	for _, pr := range problems {
		out.Skipped = append(out.Skipped, client.Skipped{Dir: pr.Dir, Name: pr.Name, Code: pr.Code, Message: pr.Message})
	}
	return out
}

func extensionCallCommand() *command {
	var scope, input string
	return &command{
		name:    "call",
		usage:   "NAME OPERATION",
		short:   "call a package's operation as the operator",
		long:    "Call one of a running package's handler operations as the operator, in a scope,\nand print its output. Exits 1 when the call is refused.",
		minArgs: 2, maxArgs: 2,
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&scope, "scope", "", "the scope the call acts in")
			fs.StringVar(&input, "input", "{}", "the operation's input, a JSON object")
		},
		run: func(r *runner, args []string) error {
			var in map[string]any
			if err := json.Unmarshal([]byte(input), &in); err != nil {
				return usagef("--input is not a JSON object: %v", err)
			}
			req := client.CallRequest{Operation: args[1], Scope: scope, Input: in}
			res, err := client.New(r.place.State).Call(r.ctx, args[0], req)
			if err != nil {
				return err
			}
			err = r.emit(res, func(w io.Writer) error {
				if res.Code != "" {
					return nil
				}
				_, err := fmt.Fprintln(w, string(res.Output.Data))
				return err
			})
			if err == nil && res.Code != "" {
				err = fmt.Errorf("refused %s: %s", res.Code, res.Message)
			}
			return err
		},
	}
}

func extensionRestartCommand() *command {
	var wait time.Duration
	return &command{
		name:  "restart",
		usage: "NAME",
		short: "stop a package's process and start it again",
		long: "Restart one package: its process is stopped and started again (with the\n" +
			"files on disk now), nothing else is. Waits up to --wait for the new process's\n" +
			"handshake, then prints its state and pid, or the failure's code, message and\n" +
			"remedy. Exits 1 unless the package is running.",
		minArgs: 1, maxArgs: 1,
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&wait, "wait", 30*time.Second, fmt.Sprintf("how long to wait for the handshake, in whole seconds up to %s (0: do not wait)", maxRestartWait))
		},
		run: func(r *runner, args []string) error {
			if wait < 0 || wait > maxRestartWait {
				return usagef("--wait must be between 0s and %s", maxRestartWait)
			}
			res, err := client.New(r.place.State).Restart(r.ctx, args[0], wait)
			if err != nil {
				return err
			}
			if err := r.emit(res, func(w io.Writer) error { return writeRestart(w, res, wait) }); err != nil {
				return err
			}
			if e := res.Extension; e.State != running {
				return fmt.Errorf("%s is %s, not running", e.Name, e.State)
			}
			return nil
		},
	}
}

// writeRestart says how a restart left the package.
func writeRestart(w io.Writer, res client.RestartResult, wait time.Duration) error {
	e := res.Extension
	switch {
	case e.State == running:
		fmt.Fprintf(w, "%s: running, pid %d (protocol %d)\n", e.Name, e.PID, e.Protocol)
	case !res.Done:
		fmt.Fprintf(w, "%s: %s, not running after %s; 'open-conduit extension list' shows when it is\n", e.Name, e.State, wait)
	default:
		fmt.Fprintf(w, "%s: %s %s: %s\n", e.Name, e.State, dash(e.Code), dash(firstLine(e.LastError)))
	}
	if e.State != running && e.Remedy != "" {
		fmt.Fprintf(w, "  remedy: %s\n", e.Remedy)
	}
	if e.Log != "" && e.State != running {
		fmt.Fprintf(w, "  log: %s\n", e.Log)
	}
	return nil
}

func extensionRescanCommand() *command {
	return &command{
		name:  "rescan",
		short: "discover the packages again and start new ones",
		long: "Discover the installed and bundled packages again: new packages are started; a\n" +
			"package whose directory is gone is stopped (its KV and state stay); one whose\n" +
			"files changed keeps running as it started until it is restarted\n" +
			"('open-conduit extension restart NAME'). Prints what was added,\n" +
			"changed, removed, skipped and refused. Exits 1 when a new package was refused.",
		state: true, json: true,
		run: func(r *runner, _ []string) error {
			res, err := client.New(r.place.State).Rescan(r.ctx)
			if err != nil {
				return err
			}
			if err := r.emit(res, func(w io.Writer) error { return writeRescan(w, res) }); err != nil {
				return err
			}
			if len(res.Refused) > 0 {
				return fmt.Errorf("%d new package(s) refused", len(res.Refused))
			}
			return nil
		},
	}
}

// writeRescan lists what a rescan changed, a line per kind of change.
func writeRescan(w io.Writer, res client.Rescan) error {
	list := func(names []string) string { return dash(strings.Join(names, ", ")) }
	fmt.Fprintf(w, "added    %s\n", list(res.Added))
	fmt.Fprintf(w, "changed  %s\n", list(res.Changed))
	fmt.Fprintf(w, "removed  %s\n", list(res.Removed))
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "skipped  %s: %s (%s)\n", s.Dir, s.Message, s.Code)
	}
	for _, rf := range res.Refused {
		fmt.Fprintf(w, "refused  %s: %s (%s)\n", rf.Extension, firstLine(rf.Message), rf.Code)
	}
	if len(res.Changed)+len(res.Removed) > 0 {
		fmt.Fprintln(w, "changed and removed packages run as they started until 'open-conduit extension restart NAME'")
	}
	return nil
}
