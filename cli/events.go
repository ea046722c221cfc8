package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// pollWait is how long one long poll of a follow waits for something new,
// well inside the client's request timeout.
const pollWait = 25 * time.Second

func eventsCommand() *command {
	return &command{name: "events", short: "the event log: list, follow, show and emit into it", subs: []*command{eventsListCommand(), eventsShowCommand(), eventsEmitCommand()}}
}

func eventsListCommand() *command {
	var (
		q      client.EventsQuery
		follow bool
	)
	return &command{
		name:  "list",
		short: "list Events of the log, oldest first, after a cursor",
		long: "List one page of the event log from the running daemon, oldest first, with\n" +
			"times in the local zone and its offset. When more Events follow the page, the\n" +
			"command that reads on is printed. With --follow, keep reading: wait for new\n" +
			"Events after the last one and print them as they come, until interrupted.\n" +
			"With --json each page is one JSON object (with --follow, one after another).",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.Uint64Var(&q.After, "after", 0, "list Events after this sequence")
			fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many Events a page (1-%d)", protocol.StateEventsMax))
			fs.StringVar(&q.Scope, "scope", "", "only this scope's Events")
			boolFlag(fs, &follow, "follow", "f", "keep printing new Events as they come, until interrupted")
		},
		run: func(r *runner, _ []string) error {
			if q.Limit < 1 || q.Limit > protocol.StateEventsMax {
				return usagef("--limit must be between 1 and %d", protocol.StateEventsMax)
			}
			if follow {
				return followEvents(r, q)
			}
			evs, err := client.New(r.place.State).Events(r.ctx, q)
			if err != nil {
				return err
			}
			return r.emit(evs, func(w io.Writer) error {
				if err := writeEvents(w, evs, true); err != nil {
					return err
				}
				if evs.Next > 0 && evs.Next < evs.Latest {
					_, err = fmt.Fprintf(w, "more: %s\n", r.rerun(map[string]string{"after": strconv.FormatUint(evs.Next, 10)}))
				}
				return err
			})
		},
	}
}

// followEvents prints pages after the cursor until the command is
// interrupted; an empty page waits on the daemon for the next Event.
func followEvents(r *runner, q client.EventsQuery) error {
	c := client.New(r.place.State)
	q.Wait = pollWait
	header := true
	for {
		evs, err := c.Events(r.ctx, q)
		if r.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if len(evs.Events) == 0 {
			continue
		}
		if err := r.emit(evs, func(w io.Writer) error { return writeEvents(w, evs, header) }); err != nil {
			return err
		}
		header = false
		q.After = evs.Events[len(evs.Events)-1].Sequence
	}
}

// writeEvents is a page of Events as a table, times in the local zone with
// its offset.
func writeEvents(w io.Writer, evs client.Events, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "SEQ\tTIME\tSCOPE\tTYPE\tSOURCE\tDEPTH\tID\tROUTE")
	}
	for _, e := range evs.Events {
		route, listed := evs.Routes[e.ID]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Sequence, timeText(e.Time), e.Scope, e.Type, dash(e.Source), e.Depth, e.ID, eventRouteText(route, listed))
	}
	return tw.Flush()
}
