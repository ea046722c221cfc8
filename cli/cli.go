// Package cli is the open-conduit command tree: GNU-style flags (pflag),
// --help on every command, and a one-line error with a non-zero exit on
// misuse. main.go only calls Main.
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
	flags       func(fs *pflag.FlagSet)
	run         func(r *runner, args []string) error
	subs        []*command
}

// runner is what a running command gets: its streams and context.
type runner struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	path   string
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
			extensionCommand(),
			eventsCommand(),
			doctorCommand(),
			configCommand(),
			demoCommand(),
			extensionRunCommand(),
			versionCommand(),
		},
	}
}

// Main runs the command line args (without the program name) and returns
// the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := tree()
	cmd, path, rest := root, root.name, args
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && len(cmd.subs) > 0 {
		if rest[0] == "help" {
			rest = append(rest[1:], "--help")
			continue
		}
		sub := cmd.find(rest[0])
		if sub == nil {
			fmt.Fprintf(stderr, "%s: unknown command %q\nRun '%s --help' for the commands.\n", path, rest[0], path)
			return 2
		}
		cmd, path, rest = sub, path+" "+sub.name, rest[1:]
	}
	fs := pflag.NewFlagSet(path, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(!cmd.passThrough)
	help := new(bool)
	boolFlag(fs, help, "help", "h", "show this help")
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if err := fs.Parse(rest); err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
		return 2
	}
	if *help {
		cmd.printHelp(stdout, path, fs)
		return 0
	}
	if cmd.run == nil {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "%s: unknown command %q\nRun '%s --help' for the commands.\n", path, fs.Arg(0), path)
			return 2
		}
		cmd.printHelp(stdout, path, fs)
		return 0
	}
	if n := fs.NArg(); n < cmd.minArgs || (cmd.maxArgs >= 0 && n > cmd.maxArgs) {
		fmt.Fprintf(stderr, "%s: %s\nUsage: %s %s\nRun '%s --help' for more.\n", path, argCountProblem(cmd, n), path, cmd.usage, path)
		return 2
	}
	err := cmd.run(&runner{ctx: ctx, stdout: stdout, stderr: stderr, path: path}, fs.Args())
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	return 1
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
