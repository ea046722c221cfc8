package cli

import (
	"fmt"
	"strings"

	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

func protocolVersions() string {
	parts := make([]string, len(protocol.Versions))
	for i, v := range protocol.Versions {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

func extensionRunCommand() *command {
	return &command{
		name:  "extension-run",
		usage: "[NAME [package-manifest | package-certification]]",
		short: "serve a first-party extension over stdin/stdout (the daemon runs this)",
		long: "Serve the named first-party extension over protocol version 1 on stdin and\n" +
			"stdout, as the daemon runs it; with package-manifest or package-certification,\n" +
			"print that instead. With no name, list the extensions this binary serves.",
		maxArgs:     -1,
		passThrough: true,
		run: func(r *runner, args []string) error {
			if len(args) == 0 {
				for _, n := range extensions.Names() {
					fmt.Fprintln(r.stdout, n)
				}
				return nil
			}
			build, ok := extensions.Served[args[0]]
			if !ok {
				return usagef("no first-party extension is named %q; this binary serves: %s",
					args[0], strings.Join(extensions.Names(), ", "))
			}
			if len(args) > 1 && args[1] != "package-manifest" && args[1] != "package-certification" {
				return usagef("unknown subcommand %q: use package-manifest or package-certification, or nothing to serve", args[1])
			}
			ext := build()
			if cert, ok := extensions.Certifications[args[0]]; ok {
				sdk.Certification(cert)(ext)
			}
			if code := sdk.RunWith(ext, args[1:], r.stdout, r.stderr); code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
}

// exitStatus ends a command with a status whose reason is already printed
// (the SDK says why an extension stopped on stderr).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
