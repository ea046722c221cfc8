package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

func statusCommand() *command {
	return &command{
		name:  "status",
		short: "show the running daemon's phase, config generation and packages",
		long: "Show the running daemon: its phase (starting, running, stopping), pid, uptime,\n" +
			"state directory, where the live config came from and the file serve reads, the\n" +
			"config generation and its hash, and how many packages are running of all.",
		state: true, json: true,
		run: func(r *runner, _ []string) error {
			s, err := client.New(r.place.State).Status(r.ctx)
			if err != nil {
				return err
			}
			return r.emit(s, func(w io.Writer) error { return writeStatus(w, s, time.Now()) })
		},
	}
}

// writeStatus is status as aligned name and value lines; now dates the
// uptime.
func writeStatus(w io.Writer, s client.Status, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	uptime := "-"
	if !s.Started.IsZero() {
		uptime = fmt.Sprintf("%s (since %s)", now.Sub(s.Started).Round(time.Second), timeText(s.Started))
	}
	generation := fmt.Sprint(s.Generation)
	if s.Hash != "" {
		generation += " (hash " + s.Hash + ")"
	}
	fmt.Fprintf(tw, "phase\t%s\n", dash(s.Phase))
	fmt.Fprintf(tw, "version\t%s\n", dash(s.Version))
	fmt.Fprintf(tw, "pid\t%d\n", s.PID)
	fmt.Fprintf(tw, "uptime\t%s\n", uptime)
	fmt.Fprintf(tw, "state dir\t%s\n", dash(s.State))
	fmt.Fprintf(tw, "config from\t%s\n", dash(s.Config))
	fmt.Fprintf(tw, "config file\t%s\n", dash(s.ConfigFile))
	fmt.Fprintf(tw, "generation\t%s\n", generation)
	fmt.Fprintf(tw, "extensions\t%d of %d running\n", s.Running, s.Extensions)
	fmt.Fprintf(tw, "webhooks\t%s\n", webhookURL(s.Webhooks))
	return tw.Flush()
}

// webhookURL is where the webhook listener takes requests, or a dash when
// it does not listen.
func webhookURL(addr string) string {
	if addr == "" {
		return "-"
	}
	return "http://" + addr
}
