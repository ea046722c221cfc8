package sdk

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Main is the whole main of an extension's binary:
//
//	func main() { sdk.Main(ext) }
//
// It runs Run with the process's arguments and exits with its status. It
// is the only function of the SDK that exits the process.
func Main(x *Extension) { os.Exit(Run(x, os.Args[1:])) }

// Run is what Main runs, returning the exit status instead of exiting. With
// no argument it serves x on stdin and stdout (Serve) until stdin closes:
// 0 on a clean end, 1 when serving failed. Run by hand with a terminal on
// stdin, it says on stderr what the binary is and how to run it, and
// returns 1 instead of waiting for protocol messages that will not come.
// The package commands:
//
//	package-manifest       print the manifest (0)
//	package-certification  print the certification fixture, or {} (0)
//	help, --help, -h       print what the binary is and its commands (0)
//	version, --version     print the name and version (0)
//
// Anything else is misuse: the usage on stderr and status 2.
func Run(x *Extension, args []string) int { return RunWith(x, args, os.Stdout, os.Stderr) }

// RunWith is Run writing its answers and messages to stdout and stderr
// instead of the process's: a command line that serves an extension among
// commands of its own passes its streams. Serving still takes the process's
// stdin and stdout, as the host speaks on them.
func RunWith(x *Extension, args []string, stdout, stderr io.Writer) int {
	return run(x, args, runEnv{stdout: stdout, stderr: stderr, terminal: stdinIsTerminal, serve: Serve})
}

// runEnv is what run touches outside x, so a test can inject each part.
type runEnv struct {
	stdout, stderr io.Writer
	// terminal reports whether stdin is a terminal (a person, not a host).
	terminal func() bool
	serve    func(*Extension) error
}

func run(x *Extension, args []string, env runEnv) int {
	name := x.Manifest.Name
	if len(args) == 0 {
		if env.terminal() {
			fmt.Fprint(env.stderr, byHand(x))
			return 1
		}
		if err := env.serve(x); err != nil {
			fmt.Fprintf(env.stderr, "%s: %v\n", name, err)
			return 1
		}
		return 0
	}
	switch args[0] {
	case "package-manifest":
		b, err := x.Manifest.MarshalIndent()
		if err != nil {
			fmt.Fprintf(env.stderr, "%s: encoding the manifest: %v\n", name, err)
			return 1
		}
		_, _ = env.stdout.Write(b)
		return 0
	case "package-certification":
		b, err := certificationJSON(x.certification)
		if err != nil {
			fmt.Fprintf(env.stderr, "%s: the certification fixture is not JSON (%v): correct what sdk.Certification is given\n", name, err)
			return 1
		}
		_, _ = env.stdout.Write(b)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(env.stdout, usage(x))
		return 0
	case "version", "--version":
		fmt.Fprintf(env.stdout, "%s %s\n", name, versionOf(x))
		return 0
	}
	fmt.Fprintf(env.stderr, "%s: unknown command %q\n\n%s", name, args[0], usage(x))
	return 2
}

// certificationJSON is the fixture indented, or {} when there is none.
func certificationJSON(fixture []byte) ([]byte, error) {
	if len(fixture) == 0 {
		fixture = []byte("{}")
	}
	v := jsontext.Value(append([]byte(nil), fixture...))
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return nil, err
	}
	return append(v, '\n'), nil
}

func versionOf(x *Extension) string {
	if x.Manifest.Version == "" {
		return "(no version set)"
	}
	return x.Manifest.Version
}

// what says what the binary is, for a person who ran it.
func what(x *Extension) string {
	return fmt.Sprintf("%s %s is an Open Conduit extension: the daemon runs it and speaks JSON-RPC on its stdin and stdout.\n",
		x.Manifest.Name, versionOf(x))
}

// usage is the help text: what the binary is, how to run it, its commands.
func usage(x *Extension) string {
	cmd := strings.Join(x.Manifest.Command, " ")
	return what(x) + fmt.Sprintf(`
To run it while you build it:  open-conduit extension dev DIR
To install it:                 open-conduit extension install DIR

Usage: %[1]s [COMMAND]
  (no command)            serve the protocol on stdin and stdout (the daemon runs this)
  package-manifest        print the manifest
  package-certification   print the certification fixture
  version                 print the name and version
  help                    print this help
`, cmd)
}

// byHand is what a person who ran the binary in a terminal reads.
func byHand(x *Extension) string {
	cmd := strings.Join(x.Manifest.Command, " ")
	return what(x) + fmt.Sprintf(`It is not waiting for you: stdin is a terminal, not the daemon.
  open-conduit extension dev DIR       build it, run it in a throwaway daemon, restart it on changes
  open-conduit extension install DIR   install it for your daemon
  %[1]s package-manifest    print what it declares
  %[1]s help                list its commands
`, cmd)
}
