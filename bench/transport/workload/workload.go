// Package workload is the one workload every transport runs: the same
// messages, the same sizes, the same timings, so the figures compare.
package workload

import (
	"encoding/json"
	"os"
	"strconv"
	"time"
)

// EchoText is the echo's payload: a JSON object of about 200 bytes on the
// wire with its envelope, the size the seed's prototype measured.
const EchoText = "the quick brown fox jumps over the lazy dog; the quick brown fox jumps over the lazy dog"

// Echo is the echo's input and output, and the JSON every transport carries.
type Echo struct {
	Text string `json:"text"`
}

// Callbacks asks the extension to call the host back N times while serving,
// timing each call itself.
type Callbacks struct {
	N int `json:"n"`
}

// CallbackTimes are the callback latencies the extension measured, in ns.
type CallbackTimes struct {
	Nanos []int64 `json:"nanos"`
}

// Upload asks for Bytes bytes written in Chunk-byte acknowledged chunks.
type Upload struct {
	Bytes int `json:"bytes"`
	Chunk int `json:"chunk"`
}

// Uploaded is what the host acknowledged in the end.
type Uploaded struct {
	Size   int64 `json:"size"`
	Chunks int   `json:"chunks"`
}

// Wait asks the extension to wait until cancelled and then record the
// moment it saw the cancel (wall clock, ns) under Key.
type Wait struct {
	Key string `json:"key"`
}

// Crash asks the extension to write the wall-clock time (ns) to File and
// exit at once.
type Crash struct {
	File string `json:"file"`
}

// patternBlock is the block Pattern repeats: xorshift bytes, so the data
// has no run json or base64 could shortcut.
const patternBlock = 64 << 10

// Pattern is n deterministic bytes: a 64 KiB block of xorshift bytes
// repeated. Every extension makes its upload's data in the timed call, so
// the data is made fast: byte by byte, 16 MiB took about 34 ms, a third of
// an upload's time, in every transport alike; repeated, it takes a copy.
func Pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b[:min(n, patternBlock)] {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	for done := patternBlock; done < n; done *= 2 {
		copy(b[done:], b[:done])
	}
	return b
}

// WriteNow writes the wall clock, ns, to path.
func WriteNow(path string) {
	_ = os.WriteFile(path, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644)
}

// ReadTime reads a time WriteNow wrote.
func ReadTime(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return time.Unix(0, n), err
}

// MustJSON encodes v.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
