package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

func extensionCheckCommand() *command {
	var allow []string
	return &command{
		name:  "check",
		usage: "DIR",
		short: "lint a package directory before install, reporting every problem",
		long: "Check a package directory without starting it or a daemon: the manifest's rules\n" +
			"(each broken rule on its own line), the directory named after the manifest, the\n" +
			"command (inside the package, executable, built for this platform), names Open\n" +
			"Conduit or the packages it serves and bundles already register, the playbooks\n" +
			"and every operation they name, and certification.json. Each finding has a code,\n" +
			"where it is, what is wrong and what to change. Exits 1 when any finding is an\n" +
			"error; warnings do not fail.\n\nCodes: " + strings.Join(checkCodes, ", ") + ".",
		minArgs: 1, maxArgs: 1,
		json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(&allow, "allow", nil, "names a playbook may mention though nothing declares them, such as the package's own setup probes (NAME,…)")
		},
		run: func(r *runner, args []string) error {
			rep := packages.Check(args[0], checkOptions(allow))
			if err := r.emit(rep, func(w io.Writer) error { return writeReport(w, rep) }); err != nil {
				return err
			}
			return reportError(rep)
		},
	}
}

func extensionInspectCommand() *command {
	return &command{
		name:  "inspect",
		usage: "DIR",
		short: "show what a package directory is and the problems in its layout",
		long: "Show what a package directory is, without starting it: its name, version,\n" +
			"protocol versions and command, what it provides, and the permissions it asks\n" +
			"for with what each allows. Then the layout's findings: the manifest's rules, the\n" +
			"directory's name, the command and the playbooks directory ('extension check'\n" +
			"lints the rest). Exits 1 when any finding is an error.",
		minArgs: 1, maxArgs: 1,
		json: true,
		run: func(r *runner, args []string) error {
			in := packages.Inspect(args[0], checkOptions(nil))
			if err := r.emit(in, func(w io.Writer) error { return writeInspection(w, in) }); err != nil {
				return err
			}
			return reportError(in.Report)
		},
	}
}

// checkOptions are what a check knows of this binary: the packages it
// serves and the ones bundled beside it, whose names are taken.
func checkOptions(allow []string) packages.CheckOptions {
	s := served()
	bundled, _ := discover.Discover(discover.Options{Bundled: bundledDir(), Served: s})
	return packages.CheckOptions{Allow: allow, Served: s, Beside: bundled}
}

// reportError fails the command when the report has an error.
func reportError(rep packages.Report) error {
	if rep.OK() {
		return nil
	}
	return fmt.Errorf("%s: %s", rep.Dir, countText(rep))
}

func countText(rep packages.Report) string {
	return fmt.Sprintf("%d error(s), %d warning(s)", rep.Errors, rep.Warnings)
}

// writeReport prints each finding with its remedy, then a summary line.
func writeReport(w io.Writer, rep packages.Report) error {
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "%s %s at %s: %s\n  remedy: %s\n", f.Severity, f.Code, f.Path, f.Message, f.Remedy)
	}
	name := rep.Name
	if name == "" {
		name = rep.Dir
	}
	verdict := "ok"
	if !rep.OK() {
		verdict = "fails"
	}
	_, err := fmt.Fprintf(w, "%s: %s, %s\n", name, verdict, countText(rep))
	return err
}

// writeInspection prints what the package is, then its layout's findings.
func writeInspection(w io.Writer, in packages.Inspection) error {
	if m := in.Manifest; m != nil {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		command := strings.Join(m.Command, " ")
		if in.HostRun {
			command += " (served by open-conduit itself)"
		}
		fmt.Fprintf(tw, "name\t%s\nversion\t%s\ntitle\t%s\nsummary\t%s\nprotocol\t%s\ncommand\t%s\nkv_version\t%d\n",
			m.Name, dash(m.Version), dash(m.Title), dash(m.Summary), dash(intList(m.Protocol)), command, m.KVVersion)
		if m.Playbooks != "" {
			fmt.Fprintf(tw, "playbooks\t%s\n", m.Playbooks)
		}
		fmt.Fprintln(tw, "\nPROVIDES\tNAME\tDETAIL")
		for _, p := range in.Provides {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Kind, p.Name, dash(p.Detail))
		}
		if len(in.Provides) == 0 {
			fmt.Fprintln(tw, "nothing\t-\t-")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writePermissions(w, in.Permissions)
		fmt.Fprintln(w)
	}
	return writeReport(w, in.Report)
}

// writePermissions lists each permission with what it allows.
func writePermissions(w io.Writer, ps []packages.Permission) {
	if len(ps) == 0 {
		fmt.Fprintln(w, "\npermissions: none beyond its own surfaces")
		return
	}
	fmt.Fprintln(w, "\npermissions (what each lets the package do beyond its own surfaces):")
	for _, p := range ps {
		allows := p.Allows
		if allows == "" {
			allows = "not known to this Open Conduit"
		}
		fmt.Fprintf(w, "  %s: %s\n", p.Name, allows)
	}
}

func intList(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// checkCodes are the codes extension check can give, listed in its help.
var checkCodes = []string{
	protocol.CodeInvalidPackage, protocol.CodeIncompatibleProtocol, protocol.CodeNeedsNewerHost,
	protocol.CodeWrongPlatform, protocol.CodeNotServed, protocol.CodeRegistrationConflict,
	protocol.CodeUnknownOperation, protocol.CodeNoPlaybooks, protocol.CodeNoCertification,
	protocol.CodeInvalidCertification, protocol.CodeFixtureMissingCase,
}
