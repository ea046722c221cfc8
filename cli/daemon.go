package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/protocol"
)

// where are the flags every daemon command shares.
type where struct {
	state      string
	configFile string
	asJSON     bool
}

func (w *where) stateFlag(fs *pflag.FlagSet) {
	fs.StringVar(&w.state, "state", "", "the daemon's state directory (default $OPEN_CONDUIT_STATE, else the XDG state dir's open-conduit)")
}

func (w *where) configFlag(fs *pflag.FlagSet) {
	fs.StringVar(&w.configFile, "config", "", "the config file (default the XDG config dir's open-conduit/config.json); installed packages are in extensions/ beside it")
}

func (w *where) jsonFlag(fs *pflag.FlagSet) {
	boolFlag(fs, &w.asJSON, "json", "", "print JSON for scripts")
}

// dirs resolves the directories from the flags, the environment and XDG.
func (w *where) dirs() config.Dirs {
	d := config.DefaultDirs()
	if env := os.Getenv("OPEN_CONDUIT_STATE"); env != "" {
		d.State = env
	}
	if w.state != "" {
		d.State = w.state
	}
	if w.configFile != "" {
		d.Config = filepath.Dir(w.configFile)
	}
	return d
}

func (w *where) file() string {
	if w.configFile != "" {
		return w.configFile
	}
	return w.dirs().ConfigFile()
}

// served are the manifests of the first-party packages this binary serves.
func served() map[string]*protocol.Manifest {
	out := map[string]*protocol.Manifest{}
	for name, build := range extensions.Served {
		out[name] = build().Manifest
	}
	return out
}

// bundledDir is extensions/ beside the real executable.
func bundledDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), "extensions")
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v, json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func serveCommand() *command {
	var w where
	return &command{
		name:  "serve",
		short: "run the daemon headless",
		long: "Run the daemon: open the store, load the config (or, with no config file, the\n" +
			"embedded default: a demo scope wired to the bundled packages), start every\n" +
			"package, and serve the management API on a socket in the state directory,\n" +
			"until interrupted.",
		flags: func(fs *pflag.FlagSet) { w.stateFlag(fs); w.configFlag(fs) },
		run: func(r *runner, _ []string) error {
			dirs := w.dirs()
			state, _ := client.StateDir(w.state)
			file, named, _ := client.ConfigFile(w.configFile)
			dirs.State = state
			d, err := daemon.Start(r.ctx, daemon.Options{
				StateDir: state, ConfigFile: file, ConfigNamed: named, Bundled: bundledDir(), Served: served(), Version: Version,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(r.stderr, "open-conduit serving; state %s; watch it with 'open-conduit extension list --state %s'\n", dirs.State, dirs.State)
			<-r.ctx.Done()
			return d.Close()
		},
	}
}

func extensionCommand() *command {
	var w where
	list := &command{
		name:  "list",
		short: "list the packages, with their state when a daemon runs",
		long: "List the packages: from the running daemon (state, pid, restarts, protocol,\n" +
			"permissions, last error, granted variables) or, with no daemon, as discovery\n" +
			"finds them offline.",
		flags: func(fs *pflag.FlagSet) { w.stateFlag(fs); w.configFlag(fs); w.jsonFlag(fs) },
		run: func(r *runner, _ []string) error {
			c := client.New(w.dirs().State)
			exts, err := c.Extensions(r.ctx)
			if errors.Is(err, client.ErrNoDaemon) {
				exts = offlineExtensions(w.dirs())
				defer fmt.Fprintln(r.stderr, err)
			} else if err != nil {
				return err
			}
			if w.asJSON {
				return printJSON(r.stdout, exts)
			}
			tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE\tSTATE\tPID\tRESTARTS\tPERMISSIONS\tLAST ERROR")
			for _, e := range exts.Extensions {
				pid := "-"
				if e.PID > 0 {
					pid = fmt.Sprint(e.PID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Name, e.Version, e.Source, e.State, pid, e.Restarts,
					strings.Join(e.Permissions, ","), firstLine(e.LastError))
			}
			_ = tw.Flush()
			for _, s := range exts.Skipped {
				fmt.Fprintf(r.stdout, "skipped %s: %s (%s)\n", s.Dir, s.Message, s.Code)
			}
			return nil
		},
	}
	var (
		scope string
		input string
	)
	call := &command{
		name:    "call",
		usage:   "NAME OPERATION",
		short:   "call a package's operation as the operator",
		long:    "Call one of a running package's handler operations as the operator, in a scope,\nand print its output. Exits 1 when the call is refused.",
		minArgs: 2, maxArgs: 2,
		flags: func(fs *pflag.FlagSet) {
			w.stateFlag(fs)
			w.jsonFlag(fs)
			fs.StringVar(&scope, "scope", "", "the scope the call acts in")
			fs.StringVar(&input, "input", "{}", "the operation's input, a JSON object")
		},
		run: func(r *runner, args []string) error {
			var in map[string]any
			if err := json.Unmarshal([]byte(input), &in); err != nil {
				return usagef("--input is not a JSON object: %v", err)
			}
			res, err := client.New(w.dirs().State).Call(r.ctx, args[0], client.CallRequest{Operation: args[1], Scope: scope, Input: in})
			if err != nil {
				return err
			}
			if w.asJSON {
				if err := printJSON(r.stdout, res); err != nil {
					return err
				}
			} else if res.Code == "" {
				fmt.Fprintln(r.stdout, string(res.Output.Data))
			}
			if res.Code != "" {
				return fmt.Errorf("refused %s: %s", res.Code, res.Message)
			}
			return nil
		},
	}
	return &command{name: "extension", short: "packages: list them, call their operations", subs: []*command{list, call}}
}

func offlineExtensions(dirs config.Dirs) client.Extensions {
	pkgs, problems := discover.Discover(discover.Options{Installed: dirs.Installed(), Bundled: bundledDir(), Served: served()})
	var out client.Extensions
	for _, p := range pkgs {
		out.Extensions = append(out.Extensions, client.Extension{Name: p.Name, Version: p.Manifest.Version, Title: p.Manifest.Title,
			Source: string(p.Source), HostRun: p.HostRun, Dir: p.Dir, State: "not running", Permissions: p.Manifest.Permissions})
	}
	for _, p := range problems {
		out.Skipped = append(out.Skipped, client.Skipped{Dir: p.Dir, Name: p.Name, Code: p.Code, Message: p.Message})
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

func eventsCommand() *command {
	var (
		w     where
		after uint64
		limit int
		scope string
	)
	list := &command{
		name:  "list",
		short: "list Events of the log, oldest first, after a cursor",
		long:  "List one page of the event log from the running daemon, oldest first.\nPass the printed next cursor as --after to read on.",
		flags: func(fs *pflag.FlagSet) {
			w.stateFlag(fs)
			w.jsonFlag(fs)
			fs.Uint64Var(&after, "after", 0, "list Events after this sequence")
			fs.IntVar(&limit, "limit", 100, "at most this many Events (1-1000)")
			fs.StringVar(&scope, "scope", "", "only this scope's Events")
		},
		run: func(r *runner, _ []string) error {
			if limit < 1 || limit > protocol.StateEventsMax {
				return usagef("--limit must be between 1 and %d", protocol.StateEventsMax)
			}
			evs, err := client.New(w.dirs().State).Events(r.ctx, client.EventsQuery{After: after, Limit: limit, Scope: scope})
			if err != nil {
				return err
			}
			if w.asJSON {
				return printJSON(r.stdout, evs)
			}
			tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tSCOPE\tTYPE\tSOURCE\tDEPTH\tID")
			for _, e := range evs.Events {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Sequence, e.Time.Local().Format(time.DateTime), e.Scope, e.Type, e.Source, e.Depth, e.ID)
			}
			_ = tw.Flush()
			if evs.Next > 0 && evs.Next < evs.Latest {
				fmt.Fprintf(r.stdout, "more: open-conduit events list --after %d\n", evs.Next)
			}
			return nil
		},
	}
	return &command{name: "events", short: "the event log: list it", subs: []*command{list}}
}

func doctorCommand() *command {
	var w where
	return &command{
		name:  "doctor",
		short: "check the running daemon and its packages",
		long:  "Run the daemon's checks and every package's declared doctor checks.\nExits 1 when any check fails.",
		flags: func(fs *pflag.FlagSet) { w.stateFlag(fs); w.jsonFlag(fs) },
		run: func(r *runner, _ []string) error {
			doc, err := client.New(w.dirs().State).Doctor(r.ctx)
			if err != nil {
				return err
			}
			if w.asJSON {
				if err := printJSON(r.stdout, doc); err != nil {
					return err
				}
			} else {
				for _, c := range doc.Checks {
					code := ""
					if c.Code != "" {
						code = " [" + c.Code + "]"
					}
					fmt.Fprintf(r.stdout, "%-4s %s: %s%s\n", c.Status, c.Name, c.Detail, code)
				}
			}
			if !doc.OK {
				return errors.New("a check failed")
			}
			return nil
		},
	}
}

func configCommand() *command {
	var w where
	printProblems := func(out io.Writer, ps []client.Problem) {
		for _, p := range ps {
			fmt.Fprintf(out, "%s %s: %s (%s)\n", p.Severity, p.Path, p.Message, p.Code)
		}
	}
	check := &command{
		name:  "check",
		short: "validate a config file offline",
		long: "Validate the config file offline against the packages discovery finds (installed\n" +
			"beside it, bundled, served by this binary): the format's rules first, then each\n" +
			"package the config uses is started, for validate alone, to check the entries and\n" +
			"connections of its types. Every problem is printed with the JSON path it is at.\n" +
			"Exits 1 on any error; warnings do not fail.",
		flags: func(fs *pflag.FlagSet) { w.configFlag(fs); w.jsonFlag(fs) },
		run: func(r *runner, _ []string) error {
			file := w.file()
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("reading the config: %w (pass --config FILE)", err)
			}
			pkgs, _ := discover.Discover(discover.Options{Installed: w.dirs().Installed(), Bundled: bundledDir(), Served: served()})
			var ms []*protocol.Manifest
			for _, p := range pkgs {
				ms = append(ms, p.Manifest)
			}
			// The packages check their own objects: each one the config
			// uses is started for validate alone.
			_, ps := validate.Run(r.ctx, validate.Input{Text: data, Source: file, Running: ms, Ask: validate.Offline(pkgs, validate.OfflineOptions{})})
			res := client.Validation{OK: len(ps.Errors()) == 0}
			for _, p := range ps {
				res.Problems = append(res.Problems, client.Problem{Path: p.Path, Code: p.Code, Severity: p.Severity, Message: p.Message})
			}
			if w.asJSON {
				if err := printJSON(r.stdout, res); err != nil {
					return err
				}
			} else {
				printProblems(r.stdout, res.Problems)
				if res.OK {
					fmt.Fprintf(r.stdout, "%s is valid (%d warning(s))\n", file, len(res.Problems))
				}
			}
			if !res.OK {
				return fmt.Errorf("%s has %d error(s)", file, len(ps.Errors()))
			}
			return nil
		},
	}
	apply := &command{
		name:  "apply",
		short: "apply a config file to the running daemon",
		long: "Validate the config file against the running daemon's packages and apply it:\n" +
			"every package is configured again, without a restart. A config with errors\n" +
			"changes nothing. Exits 1 when it is not applied.",
		flags: func(fs *pflag.FlagSet) { w.stateFlag(fs); w.configFlag(fs); w.jsonFlag(fs) },
		run: func(r *runner, _ []string) error {
			data, err := os.ReadFile(w.file())
			if err != nil {
				return fmt.Errorf("reading the config: %w (pass --config FILE)", err)
			}
			ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
			defer cancel()
			res, err := client.New(w.dirs().State).ApplyConfig(ctx, data)
			if err != nil {
				return err
			}
			if w.asJSON {
				if err := printJSON(r.stdout, res); err != nil {
					return err
				}
			} else {
				printProblems(r.stdout, res.Problems)
				for _, rf := range res.Refused {
					fmt.Fprintf(r.stdout, "refused by %s: %s (%s)\n", rf.Extension, firstLine(rf.Message), rf.Code)
				}
				if res.Applied {
					fmt.Fprintf(r.stdout, "applied generation %d (%s)\n", res.Generation, res.Hash)
				}
			}
			if !res.Applied {
				return errors.New("not applied: fix the errors above")
			}
			return nil
		},
	}
	return &command{name: "config", short: "the configuration: check and apply it", subs: []*command{check, apply}}
}
