// Package cli is the open-conduit command tree: GNU-style flags (pflag),
// --help on every command, and a one-line error with a non-zero exit on
// misuse (2) or failure (1). main.go only calls Main.
//
// Every command prints through one helper (runner.emit): JSON with --json,
// else a table, both from the same value. The state directory and the
// config file are resolved once, to absolute paths, by the client package's
// rules before a command runs; commands that talk to a daemon do so only
// through the client package.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Version is the build's version, set with -ldflags at release.
var Version = "dev"

// command is one node of the tree. Leaf commands run; inner ones list
// their subcommands.
type command struct {
	name  string
	usage string // arguments after the command path, e.g. "NAME [ARGS…]"
	short string // one line, for the parent's list
	long  string // what --help says
	// args bounds the positional arguments (max < 0: any number).
	minArgs, maxArgs int
	// passThrough stops flag parsing at the first argument, for commands
	// that hand their arguments on (extension-run).
	passThrough bool
	// state, config and json add the shared --state, --config and --json
	// flags; Main resolves the first two before run.
	state, config, json bool
	flags               func(fs *pflag.FlagSet)
	run                 func(r *runner, args []string) error
	subs                []*command
}

// runner is what a running command gets: its streams, context, parsed
// flags and resolved place.
type runner struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	// stdin is the process's standard input (call --input -).
	stdin io.Reader
	path  string
	// flags are the command's parsed flags (for hints that repeat them).
	flags *pflag.FlagSet
	// asJSON is --json: emit prints JSON instead of the table.
	asJSON bool
	// place is the resolved --state and --config.
	place place
}

// usageError is misuse: it prints with a pointer to --help and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// tree builds the command tree. It is built per invocation because flag
// variables live in the commands' closures.
func tree() *command {
	return &command{
		name:  "open-conduit",
		short: "a plugin host whose extensions are processes speaking JSON-RPC over stdio",
		long: "Open Conduit runs extensions as their own processes, speaking JSON-RPC 2.0 over\n" +
			"stdin and stdout, and supervises, scopes and calls them.",
		subs: []*command{
			serveCommand(),
			statusCommand(),
			extensionCommand(),
			logsCommand(),
			eventsCommand(),
			workCommand(),
			routeCommand(),
			timersCommand(),
			ingressCommand(),
			callCommand(),
			doctorCommand(),
			configCommand(),
			tuiCommand(),
			demoCommand(),
			extensionRunCommand(),
			versionCommand(),
		},
	}
}

// Main runs the command line args (without the program name) and returns
// the exit status: 0, 1 when the command failed, 2 on misuse.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	inv, err := parse(args)
	if err != nil {
		return misuse(stderr, inv.path, err.Error())
	}
	cmd := inv.cmd
	if inv.help || cmd.run == nil {
		cmd.printHelp(stdout, inv.path, inv.flags)
		return 0
	}
	r, err := inv.runner(ctx, stdout, stderr)
	if err == nil {
		err = cmd.run(r, inv.flags.Args())
	}
	var (
		ue usageError
		es exitStatus
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &ue):
		return misuse(stderr, inv.path, err.Error())
	default:
		fmt.Fprintf(stderr, "%s: %s\n", inv.path, oneLine(err.Error()))
		return 1
	}
}

// invocation is a command line parsed against the tree.
type invocation struct {
	cmd   *command
	path  string
	flags *pflag.FlagSet
	help  bool
	where where
	json  bool
}

// parse finds the command args name and parses its flags and arguments. An
// error is misuse; path then names the command it was found in.
func parse(args []string) (*invocation, error) {
	root := tree()
	inv := &invocation{cmd: root, path: root.name}
	rest := args
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && len(inv.cmd.subs) > 0 {
		if rest[0] == "help" {
			rest = append(rest[1:], "--help")
			continue
		}
		sub := inv.cmd.find(rest[0])
		if sub == nil {
			return inv, fmt.Errorf("unknown command %q", rest[0])
		}
		inv.cmd, inv.path, rest = sub, inv.path+" "+sub.name, rest[1:]
	}
	cmd := inv.cmd
	inv.flags = cmd.flagSet(inv.path, &inv.help, &inv.where, &inv.json)
	if err := inv.flags.Parse(rest); err != nil {
		return inv, err
	}
	n := inv.flags.NArg()
	switch {
	case inv.help:
	case cmd.run == nil && n > 0:
		return inv, fmt.Errorf("unknown command %q", inv.flags.Arg(0))
	case cmd.run != nil && (n < cmd.minArgs || (cmd.maxArgs >= 0 && n > cmd.maxArgs)):
		return inv, fmt.Errorf("%s; usage: %s %s", argCountProblem(cmd, n), inv.path, cmd.usage)
	}
	return inv, nil
}

// flagSet is the command's flags: --help, the shared ones it asks for, and
// its own.
func (c *command) flagSet(path string, help *bool, w *where, asJSON *bool) *pflag.FlagSet {
	fs := pflag.NewFlagSet(path, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(!c.passThrough)
	boolFlag(fs, help, "help", "h", "show this help")
	if c.state {
		w.stateFlag(fs)
	}
	if c.config {
		w.configFlag(fs)
	}
	if c.json {
		boolFlag(fs, asJSON, "json", "", "print JSON for scripts instead of the table")
	}
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// runner resolves the directories once, for the command to run with.
func (inv *invocation) runner(ctx context.Context, stdout, stderr io.Writer) (*runner, error) {
	p, err := inv.where.resolve()
	if err != nil {
		return nil, err
	}
	return &runner{ctx: ctx, stdout: stdout, stderr: stderr, stdin: os.Stdin, path: inv.path, flags: inv.flags, asJSON: inv.json, place: p}, nil
}

// misuse prints one line, naming the command and pointing at its --help,
// and returns the exit status of misuse.
func misuse(stderr io.Writer, path, msg string) int {
	fmt.Fprintf(stderr, "%s: %s (run '%s --help' for usage)\n", path, oneLine(msg), path)
	return 2
}

func argCountProblem(cmd *command, n int) string {
	switch {
	case cmd.maxArgs == 0:
		return fmt.Sprintf("takes no arguments, got %d", n)
	case n < cmd.minArgs:
		return fmt.Sprintf("needs at least %d argument(s), got %d", cmd.minArgs, n)
	default:
		return fmt.Sprintf("takes at most %d argument(s), got %d", cmd.maxArgs, n)
	}
}

func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) printHelp(w io.Writer, path string, fs *pflag.FlagSet) {
	if c.long != "" {
		fmt.Fprintf(w, "%s\n\n", c.long)
	} else if c.short != "" {
		fmt.Fprintf(w, "%s: %s\n\n", path, c.short)
	}
	usage := path
	if len(c.subs) > 0 && c.run == nil {
		usage += " COMMAND"
	}
	if c.usage != "" {
		usage += " " + c.usage
	}
	fmt.Fprintf(w, "Usage:\n  %s [flags]\n", usage)
	if len(c.subs) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-16s %s\n", s.name, s.short)
		}
	}
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	if len(c.subs) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n", path)
	}
}

func versionCommand() *command {
	return &command{
		name:  "version",
		short: "print the version",
		long:  "Print the open-conduit version and the protocol versions it speaks.",
		run: func(r *runner, _ []string) error {
			fmt.Fprintf(r.stdout, "open-conduit %s (protocol %s)\n", Version, protocolVersions())
			return nil
		},
	}
}
