package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

// pipeRunner is the physical limit: lines over the same kind of pipes, no
// protocol.
type pipeRunner struct {
	bins binaries
	work string
	cfg  config
}

func (r *pipeRunner) name() string { return "pipe" }

type pipeChild struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Reader
}

func startPipe(bin string, args ...string) (*pipeChild, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	return &pipeChild{cmd: cmd, in: inW, out: bufio.NewReaderSize(outR, 1<<16)}, nil
}

func (c *pipeChild) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}

// line sends one line and reads the answering line.
func (c *pipeChild) line(msg []byte) ([]byte, error) {
	if _, err := c.in.Write(msg); err != nil {
		return nil, err
	}
	return c.out.ReadSlice('\n')
}

// rpcLine is the workload's echo request as one JSON-RPC line.
func rpcLine(id int64) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "echo", "params": workload.Echo{Text: workload.EchoText}})
	return append(b, '\n')
}

// coldWarm times a cold start (a fresh copy of the binary, to its first
// line back) and a warm restart (the same binary again), and returns the
// restarted child and the binary.
func (r *pipeRunner) coldWarm(f figures) (*pipeChild, string, error) {
	msg := rpcLine(1)
	fresh, err := freshCopy(r.bins.pipe, r.work)
	if err != nil {
		return nil, "", err
	}
	t := time.Now()
	c, err := startPipe(fresh)
	if err != nil {
		return nil, fresh, err
	}
	if _, err := c.line(msg); err != nil {
		c.close()
		return nil, fresh, err
	}
	f.add("cold_start_ms", ms(time.Since(t)))
	c.close()

	t = time.Now()
	if c, err = startPipe(fresh); err != nil {
		return nil, fresh, err
	}
	if _, err := c.line(msg); err != nil {
		c.close()
		return nil, fresh, err
	}
	f.add("warm_restart_ms", ms(time.Since(t)))
	return c, fresh, nil
}

func (r *pipeRunner) starts(f figures) error {
	c, _, err := r.coldWarm(f)
	if err != nil {
		return err
	}
	c.close()
	return nil
}

func (r *pipeRunner) round(f figures) error {
	msg := rpcLine(1)

	c, fresh, err := r.coldWarm(f)
	if err != nil {
		return err
	}

	lat := make([]time.Duration, 0, r.cfg.echoes)
	for i := 0; i < r.cfg.echoes; i++ {
		t := time.Now()
		if _, err := c.line(msg); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	f.add("echo_p50_us", percentile(lat, 0.5))
	f.add("echo_p99_us", percentile(lat, 0.99))
	c.close()

	// The encoding floor: both sides encode and decode with encoding/json.
	j, err := startPipe(fresh, "-json")
	if err != nil {
		return err
	}
	lat = lat[:0]
	for i := 0; i < r.cfg.echoes; i++ {
		t := time.Now()
		line := rpcLine(int64(i))
		out, err := j.line(line)
		if err != nil {
			return err
		}
		var resp struct {
			ID     int64         `json:"id"`
			Result workload.Echo `json:"result"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.Result.Text != workload.EchoText {
			return fmt.Errorf("json echo: %v", err)
		}
		lat = append(lat, time.Since(t))
	}
	f.add("json_echo_p50_us", percentile(lat, 0.5))
	f.add("json_echo_p99_us", percentile(lat, 0.99))
	j.close()

	// Acknowledged chunks, raw bytes.
	data := workload.Pattern(r.cfg.artifact)
	for _, chunk := range artifactChunks {
		a, err := startPipe(fresh, "-ack", strconv.Itoa(chunk.size))
		if err != nil {
			return err
		}
		ack := make([]byte, 1)
		t := time.Now()
		for off := 0; off < len(data); off += chunk.size {
			if _, err := a.in.Write(data[off:min(off+chunk.size, len(data))]); err != nil {
				return err
			}
			if _, err := io.ReadFull(a.out, ack); err != nil {
				return err
			}
		}
		f.add(chunk.key, float64(len(data))/(1<<20)/time.Since(t).Seconds())
		a.close()
	}
	return nil
}
