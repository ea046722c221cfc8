package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/daemon"
)

// logLevels are --log-level's choices, least severe first.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func serveCommand() *command {
	var level, format string
	var acceptLoss bool
	return &command{
		name:  "serve",
		short: "run the daemon headless",
		long: "Run the daemon: open the store, load the config file (or, when no --config\n" +
			"names one and the default file is missing, the embedded default: a demo scope\n" +
			"wired to the bundled packages), start every package, and serve the management\n" +
			"API on a socket in the state directory. A named config file that is missing is\n" +
			"an error. SIGHUP reads the config file again and applies it (as config apply\n" +
			"does), logging the outcome; SIGINT or SIGTERM stops the daemon. The log goes\n" +
			"to stderr. A state directory that ran a store refuses to start on one that\n" +
			"is missing, empty, or lost acknowledged commits, saying why, until restored\n" +
			"from a backup or accepted with --accept-store-loss.",
		state: true, config: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&level, "log-level", "info", "the least severe log lines written: debug, info, warn or error")
			fs.StringVar(&format, "log-format", "text", "the log's form: text (key=value) or json (an object a line)")
			fs.BoolVar(&acceptLoss, "accept-store-loss", false, "start on the store as it is although it lost what this state directory recorded (missing or empty, another store, or fewer commits than were acknowledged), instead of refusing; for one start, as the record then follows the store")
		},
		run: func(r *runner, _ []string) error {
			logger, err := newLogger(r.stderr, level, format)
			if err != nil {
				return err
			}
			// Caught before the daemon starts, so a SIGHUP during the start
			// reloads after it rather than killing the process.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			d, err := daemon.Start(r.ctx, daemon.Options{
				StateDir: r.place.State, ConfigFile: r.place.ConfigFile, ConfigNamed: r.place.Named,
				Bundled: bundledDir(), Served: served(), Version: Version, Logger: logger,
				AcceptStoreLoss: acceptLoss,
			})
			if err != nil {
				return err
			}
			logger.Info("serve: SIGHUP re-reads the config file, SIGINT or SIGTERM stops",
				"status", "open-conduit status --state "+shellQuote(r.place.State))
			for {
				select {
				case <-r.ctx.Done():
					return d.Close()
				case <-hup:
					res, err := d.Reload(r.ctx)
					logReload(logger, res, err)
				}
			}
		},
	}
}

// newLogger is the daemon's log on w, at the level and in the format the
// flags name; any other value is misuse.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	l, ok := logLevels[level]
	if !ok {
		return nil, usagef("--log-level %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usagef("--log-format %q is not one of text, json", format)
	}
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
