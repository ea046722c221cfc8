//go:build !unix

package main

import "os"

// takeStdio returns stdin and stdout as they are: non-blocking pipes are a
// Unix matter.
func takeStdio() (in, out *os.File, err error) { return os.Stdin, os.Stdout, nil }
