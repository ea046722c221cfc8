package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

func timersCommand() *command {
	return &command{name: "timers", short: "the timers packages armed: list them", subs: []*command{timersListCommand()}}
}

func timersListCommand() *command {
	var q client.TimersQuery
	return &command{
		name:  "list",
		short: "list the armed timers in ID order, one page after a cursor",
		long: "List one page of the timers the packages armed, in ID order: the package that\n" +
			"owns each, its scope, when it is due (in the local zone, with its offset), the\n" +
			"Event family it fires, the recurrence that rearms it, and how often it fired.\n" +
			"When more timers follow the page, the command that reads on is printed.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&q.After, "after", "", "list timers after this ID (a page's cursor)")
			fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many timers a page (1-%d)", client.MaxWorkPage))
		},
		run: func(r *runner, _ []string) error {
			if q.Limit < 1 || q.Limit > client.MaxWorkPage {
				return usagef("--limit must be between 1 and %d", client.MaxWorkPage)
			}
			ts, err := client.New(r.place.State).Timers(r.ctx, q)
			if err != nil {
				return err
			}
			return r.emit(ts, func(w io.Writer) error {
				if err := writeTimers(w, ts.Timers); err != nil {
					return err
				}
				if ts.Next != "" {
					_, err = fmt.Fprintf(w, "more: %s\n", r.rerun(map[string]string{"after": ts.Next}))
				}
				return err
			})
		},
	}
}

// writeTimers is a page of timers as a table.
func writeTimers(w io.Writer, ts []client.Timer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tSCOPE\tDUE\tFAMILY\tRECURRENCE\tFIRED")
	for _, t := range ts {
		rec := "-"
		if t.Recurrence != nil {
			rec = firstLine(strings.TrimSpace(t.Recurrence.Kind + " " + string(t.Recurrence.Rule)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", t.ID, t.Owner, dash(t.Scope), timeText(t.Due), t.Family, rec, t.Fired)
	}
	return tw.Flush()
}
