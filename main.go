// Command open-conduit is a plugin host whose extensions are processes
// speaking JSON-RPC 2.0 over stdio. See README.md.
package main

import (
	"os"

	"github.com/open-conduit/open-conduit/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
