package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/internal/logline"
)

// logLevels are --log-level's choices, least severe first.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func serveCommand() *command {
	var level, format string
	var acceptLoss bool
	var webhookAddr string
	return &command{
		name:  "serve",
		short: "run the daemon headless",
		long: "Run the daemon: open the store, load the config file (or, when no --config\n" +
			"names one and the default file is missing, the embedded default: a demo scope\n" +
			"wired to the bundled packages), start every package, and serve the management\n" +
			"API on a socket in the state directory. A named config file that is missing is\n" +
			"an error. SIGHUP reads the config file again and applies it (as config apply\n" +
			"does), logging the outcome. SIGINT or SIGTERM stops the daemon: it waits up\n" +
			"to 10 seconds for the packages to stop, then kills them; a second SIGINT or\n" +
			"SIGTERM kills them at once and exits non-zero. The log goes to stderr; a line\n" +
			"repeated within 10 seconds is counted, not repeated. A state directory that\n" +
			"ran a store refuses to start on one that is missing, empty, or lost\n" +
			"acknowledged commits, saying why, until restored from a backup or accepted\n" +
			"with --accept-store-loss. Packages' webhooks are served on --webhook-addr,\n" +
			"loopback on a port the system picks unless you name another address; status\n" +
			"shows where.",
		state: true, config: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&level, "log-level", "info", "the least severe log lines written: debug, info, warn or error")
			fs.StringVar(&format, "log-format", "text", "the log's form: text (key=value) or json (an object a line)")
			fs.StringVar(&webhookAddr, "webhook-addr", "", "host:port the webhook listener serves packages' webhook paths on (default 127.0.0.1 on a port the system picks); an address that is not loopback exposes them to whoever reaches it")
			fs.BoolVar(&acceptLoss, "accept-store-loss", false, "start on the store as it is although it lost what this state directory recorded (missing or empty, another store, or fewer commits than were acknowledged), instead of refusing; for one start, as the record then follows the store")
		},
		run: func(r *runner, _ []string) error {
			logger, flush, err := newLogger(r.stderr, level, format)
			if err != nil {
				return err
			}
			defer flush()
			// Caught before the daemon starts, so a SIGHUP during the start
			// reloads after it rather than killing the process, and a
			// second SIGINT or SIGTERM is seen however early the first came.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			stops := make(chan os.Signal, 2)
			signal.Notify(stops, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(stops)
			d, err := daemon.Start(r.ctx, daemon.Options{
				StateDir: r.place.State, ConfigFile: r.place.ConfigFile, ConfigNamed: r.place.Named,
				Bundled: bundledDir(), Served: served(), Version: Version, Logger: logger,
				AcceptStoreLoss: acceptLoss, WebhookAddr: webhookAddr,
			})
			if err != nil {
				return err
			}
			logger.Info("serve: SIGHUP re-reads the config file, SIGINT or SIGTERM stops",
				"status", "open-conduit status --state "+shellQuote(r.place.State))
			for {
				select {
				case sig := <-stops:
					return stop(d, sig, stops, logger)
				case <-hup:
					res, err := d.Reload(r.ctx)
					logReload(logger, res, err)
				}
			}
		},
	}
}

// stop stops the daemon after the first SIGINT or SIGTERM: it waits for
// the packages to stop (at most daemon.StopGrace), or until a second
// signal, which kills them at once and makes serve exit non-zero.
func stop(d *daemon.Daemon, first os.Signal, stops <-chan os.Signal, logger *slog.Logger) error {
	logger.Info("stopping: waiting for the packages to stop; a second SIGINT or SIGTERM kills them at once",
		"signal", first.String(), "grace", daemon.StopGrace)
	err := shutdown(d, stops, func(sig os.Signal) {
		logger.Warn("second signal: killing the packages still stopping", "signal", sig.String())
	})
	if sig, ok := errors.AsType[signalled](err); ok {
		return fmt.Errorf("stopped at a second %s: the packages still stopping were killed", sig.sig)
	}
	return err
}

// signalled is shutdown's answer when a signal cut the wait short.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "stopped at " + s.sig.String() }

// shutdown stops the daemon, waiting for its packages to stop (at most
// daemon.StopGrace). A signal on stops while it waits kills them at once:
// onSignal hears of it first, and the answer is a signalled error.
func shutdown(d *daemon.Daemon, stops <-chan os.Signal, onSignal func(os.Signal)) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Shutdown(ctx) }()
	select {
	case err := <-done:
		return err
	case sig := <-stops:
		onSignal(sig)
		cancel()
		<-done
		return signalled{sig}
	}
}

// newLogger is the daemon's log on w, at the level and in the format the
// flags name; any other value is misuse. A line repeated within
// logline.DefaultInterval is counted, not repeated; flush writes the counts
// still pending.
func newLogger(w io.Writer, level, format string) (logger *slog.Logger, flush func(), err error) {
	l, ok := logLevels[level]
	if !ok {
		return nil, nil, usagef("--log-level %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, nil, usagef("--log-format %q is not one of text, json", format)
	}
	dedupe := logline.New(h, logline.DefaultInterval)
	return slog.New(dedupe), dedupe.Flush, nil
}

// logReload logs what a SIGHUP's reload did: applied, unchanged, or each
// problem that kept the running generation.
func logReload(logger *slog.Logger, res client.Applied, err error) {
	if err != nil {
		logger.Error("config reload failed; the running generation stays", "err", err)
		return
	}
	for _, p := range res.Problems {
		lvl := slog.LevelWarn
		if p.Severity == config.Error {
			lvl = slog.LevelError
		}
		logger.Log(context.Background(), lvl, "config problem", "path", p.Path, "code", p.Code, "message", p.Message)
	}
	for _, rf := range res.Refused {
		logger.Warn("config refused by a package", "extension", rf.Extension, "code", rf.Code, "message", firstLine(rf.Message))
	}
	switch {
	case res.Unchanged:
		logger.Info("config reload: no changes", "generation", res.Generation)
	case res.Applied:
		logger.Info("config reload: applied", "generation", res.Generation, "hash", res.Hash, "file", res.File)
	default:
		logger.Error("config reload: not applied; the running generation stays", "errors", countErrors(res.Problems))
	}
}
