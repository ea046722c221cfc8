package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

func logsCommand() *command {
	var (
		tail   int
		follow bool
	)
	return &command{
		name:  "logs",
		usage: "NAME",
		short: "print a package's stderr log",
		long: "Print the last lines of a package's stderr log, as the running daemon keeps it.\n" +
			"With --follow, keep printing lines as the package writes them, until\n" +
			"interrupted; the log is bounded, and when it starts over a marker line says so.\n" +
			"With --json each read is one JSON object (with --follow, one after another).",
		minArgs: 1, maxArgs: 1,
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&tail, "tail", 100, "print this many of the last lines (at least 1)")
			boolFlag(fs, &follow, "follow", "f", "keep printing new lines as they come, until interrupted")
		},
		run: func(r *runner, args []string) error {
			if tail < 1 {
				return usagef("--tail must be at least 1")
			}
			c := client.New(r.place.State)
			lg, err := c.Logs(r.ctx, args[0], tail)
			if err != nil {
				return err
			}
			if err := r.emit(lg, func(w io.Writer) error { return writeLog(w, lg) }); err != nil || !follow {
				return err
			}
			return followLog(r, c, args[0], lg.Offset)
		},
	}
}

// followLog long-polls the log from offset on until the command is
// interrupted.
func followLog(r *runner, c *client.Client, name string, offset int64) error {
	for {
		lg, err := c.LogsAfter(r.ctx, name, offset, pollWait)
		if r.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if len(lg.Lines) > 0 || lg.Reset {
			if err := r.emit(lg, func(w io.Writer) error { return writeLog(w, lg) }); err != nil {
				return err
			}
		}
		offset = lg.Offset
	}
}

// writeLog prints a log's lines, after a marker when the log started over.
func writeLog(w io.Writer, lg client.Log) error {
	if lg.Reset {
		if _, err := fmt.Fprintf(w, "--- %s's log started over (it is bounded); the lines below are from its top ---\n", lg.Extension); err != nil {
			return err
		}
	}
	return writeLines(w, lg.Lines...)
}
