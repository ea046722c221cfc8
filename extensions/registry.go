// Package extensions lists the first-party packages the open-conduit binary
// serves itself (open-conduit extension-run NAME). Each lives in its own
// folder, built only on the SDK.
package extensions

import (
	"sort"

	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/extensions/runner"
	"github.com/open-conduit/open-conduit/extensions/schedule"
	"github.com/open-conduit/open-conduit/extensions/shell"
	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/sdk"
)

// Served maps each first-party package's name to its constructor.
var Served = map[string]func() *sdk.Extension{
	hello.Name:    hello.Extension,
	notes.Name:    notes.Extension,
	runner.Name:   runner.Extension,
	schedule.Name: schedule.Extension,
	shell.Name:    shell.Extension,
	webhook.Name:  webhook.Extension,
}

// Names lists the served packages, sorted.
func Names() []string {
	out := make([]string, 0, len(Served))
	for n := range Served {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
