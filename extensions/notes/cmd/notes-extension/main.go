// Command notes-extension serves one release of the notes package as a
// package of its own, the release chosen when it is built:
//
//	go build -ldflags "-X main.release=1" ./extensions/notes/cmd/notes-extension
//
// so an upgrade across the three releases (and the KV migrations between
// them) runs through the real installer and daemon. Its manifest is what
// it prints for package-manifest. The release the open-conduit binary
// serves itself is the latest (open-conduit extension-run notes).
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/sdk"
)

// release is the release served, set with -ldflags -X main.release=N.
var release = "3"

func main() {
	n, err := strconv.Atoi(release)
	if err != nil || n < 1 || n > 3 {
		fmt.Fprintf(os.Stderr, "notes-extension: release %q is not 1, 2 or 3: build with -ldflags -X main.release=N\n", release)
		os.Exit(2)
	}
	x := notes.Release(n)
	x.Manifest.Command = []string{"notes-extension"}
	sdk.Main(x)
}
