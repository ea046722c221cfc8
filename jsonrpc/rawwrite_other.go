//go:build !unix

package jsonrpc

import (
	"io"
	"syscall"
)

// rawWriter is nil here: every frame goes through the deadline-bounded
// write.
func rawWriter(io.Writer) syscall.RawConn { return nil }

// writeOnce is never called without a raw writer.
func writeOnce(uintptr, []byte) int { return 0 }
