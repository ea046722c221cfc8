package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/open-conduit/open-conduit/client"
)

func ingressCommand() *command {
	return &command{name: "ingress", short: "the packages' ingress sources: list them, scan one now",
		subs: []*command{ingressSourcesCommand(), ingressReconcileCommand()}}
}

func ingressSourcesCommand() *command {
	return &command{
		name:  "sources",
		short: "list the registered sources with their checkpoints and last scans",
		long: "List every source a package's last configure registered: its package, its\n" +
			"families, the checkpoint its last complete reconcile scan left (and when, and\n" +
			"how many scans completed), this daemon run's last scan of it (complete, or the\n" +
			"error that cut it short) and when the daemon scans it next on its own.",
		state: true, json: true,
		run: func(r *runner, _ []string) error {
			res, err := client.New(r.place.State).Sources(r.ctx)
			if err != nil {
				return err
			}
			return r.emit(res, func(w io.Writer) error { return writeSources(w, res.Sources) })
		},
	}
}

func ingressReconcileCommand() *command {
	return &command{
		name:  "reconcile",
		usage: "SOURCE",
		short: "scan a source now, as the daemon does every minute",
		long: "Scan one registered source now, page by page through its package's\n" +
			"ingress.reconcile, as the daemon does on its own every minute: what an operator\n" +
			"runs after mending a source, rather than wait. Each page's new observations are\n" +
			"accepted as Events (one seen before is not accepted again); only a scan that\n" +
			"completes advances the source's checkpoint. Prints the scan's pages,\n" +
			"observations, Events accepted, whether it completed and the checkpoint; a scan\n" +
			"cut short prints what cut it and exits 1, its checkpoint unchanged.\n" +
			"`open-conduit ingress sources` lists the sources.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		run: func(r *runner, args []string) error {
			res, err := client.New(r.place.State).Reconcile(r.ctx, args[0])
			if err != nil {
				return err
			}
			err = r.emit(res, func(w io.Writer) error { return writeScan(w, res) })
			if err == nil && !res.Complete {
				err = errors.New("the scan did not complete; the checkpoint stays where it was")
			}
			return err
		},
	}
}

// writeScan says how one scan ended.
func writeScan(w io.Writer, s client.Scan) error {
	fmt.Fprintf(w, "%s (%s): %d pages, %d observations, %d Events accepted\n", s.Source, s.Package, s.Pages, s.Observations, s.Accepted)
	if s.Complete {
		_, err := fmt.Fprintf(w, "complete: checkpoint %s\n", dash(s.Checkpoint))
		return err
	}
	msg := "-"
	if s.Error != nil {
		msg = s.Error.Code + ": " + oneLine(s.Error.Message)
	}
	_, err := fmt.Fprintf(w, "incomplete (%s): checkpoint still %s\n", msg, dash(s.Checkpoint))
	return err
}

// writeSources is the sources as a table.
func writeSources(w io.Writer, ss []client.Source) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tPACKAGE\tFAMILIES\tCHECKPOINT\tCOMPLETED\tSCANS\tLAST SCAN\tNEXT SCAN")
	for _, s := range ss {
		if !s.Reconcile {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\tpush only\t-\n", s.Name, s.Package, dash(strings.Join(s.Families, ",")))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Package, dash(strings.Join(s.Families, ",")),
			dash(s.Checkpoint), timeText(s.Completed), s.Scans, lastScan(s.LastScan), timeText(s.NextScan))
	}
	return tw.Flush()
}

// lastScan is a source's last scan in a table cell.
func lastScan(s *client.Scan) string {
	switch {
	case s == nil:
		return "-"
	case s.Complete:
		return fmt.Sprintf("complete %s, %d accepted", timeText(s.Ended), s.Accepted)
	case s.Error != nil:
		return fmt.Sprintf("incomplete %s, %s", timeText(s.Ended), s.Error.Code)
	}
	return "incomplete " + timeText(s.Ended)
}
