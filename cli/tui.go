package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/tui"
)

// tuiLogName is the file in the state directory that the daemon
// `tui --embedded` starts writes its log to: the terminal is the
// dashboard's.
const tuiLogName = "tui-daemon.log"

// runDashboard shows the dashboard on the terminal until the operator
// quits. A test, having no terminal, swaps it for tui.RunWith on pipes.
var runDashboard = tui.Run

func tuiCommand() *command {
	var (
		embedded    bool
		webhookAddr string
	)
	return &command{
		name:  "tui",
		short: "a live terminal dashboard of packages, Work, Waits, Events, logs and the wire",
		long: "Show a live dashboard of the daemon in the terminal, in six panes: Extensions\n" +
			"(enter for a package's detail and doctor checks; r restarts it, l shows its\n" +
			"log, w its wire tap), Work (newest first; enter for its attempts, Wait,\n" +
			"artifacts and inputs; c cancels, i interrupts, s stops, > injects a line),\n" +
			"Waits counting down, Events with where each was routed, Logs (a package's\n" +
			"stderr log, live) and Wire (its JSON-RPC lines, live). Every action asks y/n\n" +
			"first and shows the daemon's answer; A applies the config file again. It\n" +
			"follows the daemon's change feed and shows \"disconnected, retrying\" while\n" +
			"the daemon does not answer. tab and shift+tab switch panes, / filters a list,\n" +
			"the mouse wheel scrolls, ? lists every key, q quits. NO_COLOR (or TERM=dumb)\n" +
			"turns colour off.\n" +
			"\n" +
			"By default it watches the daemon already serving --state; with none running it\n" +
			"says so and exits 1. With --embedded it starts the daemon in this process\n" +
			"instead, as serve would (--config, or the embedded demo when the default config\n" +
			"file is missing; --webhook-addr), shows the dashboard on it, and stops it when\n" +
			"the dashboard quits: it waits up to 10 seconds for the packages to stop, then\n" +
			"kills them (ctrl+c while it waits kills them at once). That daemon's log goes\n" +
			"to " + tuiLogName + " in the state directory (owner-only), not to the terminal.\n" +
			"--embedded refuses a state directory another daemon already serves.",
		state: true, config: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &embedded, "embedded", "", "start the daemon in this process for as long as the dashboard runs, instead of watching one already serving --state; its log goes to <state>/"+tuiLogName)
			fs.StringVar(&webhookAddr, "webhook-addr", "", "with --embedded: host:port the daemon serves packages' webhook paths on, as serve's flag (default 127.0.0.1 on a port the system picks)")
		},
		run: func(r *runner, _ []string) error {
			if !embedded {
				for _, f := range []string{"config", "webhook-addr"} {
					if r.flags.Changed(f) {
						return usagef("--%s is for the daemon --embedded starts: add --embedded, or drop --%s to watch the running daemon", f, f)
					}
				}
				return watchDaemon(r)
			}
			return runEmbedded(r, webhookAddr)
		},
	}
}

// watchDaemon shows the dashboard of the daemon already serving the state
// directory.
func watchDaemon(r *runner) error {
	c := client.New(r.place.State)
	// One plain read first: with no daemon, one line and a non-zero exit
	// rather than a dashboard that only retries.
	if _, err := c.Status(r.ctx); err != nil {
		if errors.Is(err, client.ErrNoDaemon) {
			return fmt.Errorf("%w, or run 'open-conduit tui --embedded --state %s' for a dashboard with a daemon of its own",
				err, shellQuote(r.place.State))
		}
		return err
	}
	return runDashboard(r.ctx, c)
}

// runEmbedded starts the daemon in this process, shows the dashboard on
// it, and stops it when the dashboard ends.
func runEmbedded(r *runner, webhookAddr string) error {
	state := r.place.State
	// The daemon's own lock would refuse too, but its words are serve's;
	// here the choice is between watching that daemon and another state.
	if _, err := client.New(state).Status(r.ctx); err == nil {
		return fmt.Errorf("a daemon already serves %s: drop --embedded to watch it, or pass another --state for a daemon of its own", state)
	}
	logPath := filepath.Join(state, tuiLogName)
	logFile := &lazyFile{path: logPath}
	defer logFile.Close()
	logger, flush, err := newLogger(logFile, "info", "text")
	if err != nil {
		return err
	}
	defer flush()
	fmt.Fprintf(r.stderr, "starting the daemon in %s; its log goes to %s\n", state, logPath)
	d, err := daemon.Start(r.ctx, daemon.Options{
		StateDir: state, ConfigFile: r.place.ConfigFile, ConfigNamed: r.place.Named,
		Bundled: bundledDir(), Served: served(), Version: Version, Logger: logger,
		WebhookAddr: webhookAddr,
	})
	if err != nil {
		return err
	}
	// A hangup (the terminal closed) ends the dashboard as q does, so the
	// daemon is still stopped rather than left to the default of dying
	// with its packages unstopped.
	ctx, stopHup := signal.NotifyContext(r.ctx, syscall.SIGHUP)
	shown := runDashboard(ctx, client.New(state))
	stopHup()
	stopped := stopEmbedded(d, r.stderr)
	flush()
	fmt.Fprintf(r.stderr, "the daemon stopped; its log is %s\n", logPath)
	return errors.Join(shown, stopped)
}

// stopEmbedded stops the daemon as serve's stop does: at most
// daemon.StopGrace for its packages to stop, and none after a SIGINT or
// SIGTERM while it waits.
func stopEmbedded(d *daemon.Daemon, stderr io.Writer) error {
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stops)
	fmt.Fprintf(stderr, "stopping the daemon: waiting up to %s for its packages to stop (ctrl+c kills them at once)\n", daemon.StopGrace)
	err := shutdown(d, stops, func(os.Signal) {})
	if sig, ok := errors.AsType[signalled](err); ok {
		return fmt.Errorf("stopped at %s: the packages still stopping were killed", sig.sig)
	}
	return err
}

// lazyFile is a log file opened at its first write. The daemon creates
// and checks the state directory before it logs anything, so the file is
// made only in a directory the daemon accepted (owner-only, never through
// a symbolic link).
type lazyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
		if l.err == nil {
			// A file left by an earlier run may have had wider modes.
			l.err = l.f.Chmod(0o600)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// Close closes the file, if a write opened it.
func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
