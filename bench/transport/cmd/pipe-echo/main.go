// Command pipe-echo is the physical limit: it echoes each line of stdin to
// stdout. With -json it decodes each line as the workload's JSON-RPC
// request and encodes an answer with encoding/json, the encoding floor.
// With -ack N it reads chunks of N bytes and acknowledges each with one
// byte, the floor for acknowledged chunked uploads.
package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

type request struct {
	ID     int64         `json:"id"`
	Method string        `json:"method"`
	Params workload.Echo `json:"params"`
	RPC    string        `json:"jsonrpc"`
}

type response struct {
	RPC    string        `json:"jsonrpc"`
	ID     int64         `json:"id"`
	Result workload.Echo `json:"result"`
}

func main() {
	// Non-blocking, as the SDK does, so the comparison is fair.
	_ = syscall.SetNonblock(0, true)
	_ = syscall.SetNonblock(1, true)
	in := bufio.NewReaderSize(os.NewFile(0, "stdin"), 1<<16)
	out := os.NewFile(1, "stdout")
	if len(os.Args) > 2 && os.Args[1] == "-ack" {
		n, _ := strconv.Atoi(os.Args[2])
		chunk := make([]byte, n)
		for {
			if _, err := io.ReadFull(in, chunk); err != nil {
				return
			}
			_, _ = out.Write([]byte{'k'})
		}
	}
	asJSON := len(os.Args) > 1 && os.Args[1] == "-json"
	buf := make([]byte, 0, 512)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		if !asJSON {
			_, _ = out.Write(line)
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			return
		}
		b, _ := json.Marshal(response{RPC: "2.0", ID: req.ID, Result: req.Params})
		buf = append(append(buf[:0], b...), '\n')
		_, _ = out.Write(buf)
	}
}
