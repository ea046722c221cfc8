//go:build !unix

package jsonrpc

import (
	"io"
	"syscall"
	"time"
)

// rawWriter is nil here: every frame goes through the deadline-bounded
// write.
func rawWriter(io.Writer) syscall.RawConn { return nil }

// rawConn is nil here, as rawWriter and rawReader are.
func rawConn(syscallConner, func(time.Time) error) syscall.RawConn { return nil }

// writeOnce is never called without a raw writer.
func writeOnce(uintptr, []byte) int { return 0 }

// rawReader is nil here: every read goes through the reader's Read.
func rawReader(io.Reader) syscall.RawConn { return nil }

// readOnce is never called without a raw reader.
func readOnce(uintptr, []byte) (int, bool) { return 0, true }
