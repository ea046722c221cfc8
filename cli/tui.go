package cli

import (
	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/tui"
)

func tuiCommand() *command {
	return &command{
		name:  "tui",
		short: "a live terminal dashboard of packages, Work, Waits and Events",
		long: "Show a live dashboard of the running daemon in the terminal: its packages\n" +
			"(Extensions), its Work (enter for one Work's attempts, Wait and inputs; c cancels\n" +
			"it after a confirmation), the active Waits counting down to their due times, and\n" +
			"a tail of the event log. It follows the daemon's change feed and shows\n" +
			"\"disconnected, retrying\" while the daemon does not answer. tab and shift+tab\n" +
			"switch panes, ? lists every key, q quits. NO_COLOR (or TERM=dumb) turns colour off.\n" +
			"With no daemon running it says so and exits 1.",
		state: true,
		run: func(r *runner, _ []string) error {
			c := client.New(r.place.State)
			// One plain read first: with no daemon, one line and a
			// non-zero exit rather than a dashboard that only retries.
			if _, err := c.Status(r.ctx); err != nil {
				return err
			}
			return tui.Run(r.ctx, c)
		},
	}
}
