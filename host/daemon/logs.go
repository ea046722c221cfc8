package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

// maxLogRead bounds what one answer reads of a log (the log itself is
// bounded at 1 MiB, so this is all of it).
const maxLogRead = 1 << 20

// logPoll is how often a follow looks at a log that has not grown. The
// answer is a long poll; the client asks again at once.
const logPoll = 200 * time.Millisecond

// Log returns the last tail lines of a package's stderr log.
func (d *Daemon) Log(name string, tail int) (client.Log, error) {
	path, err := d.logPath(name)
	if err != nil {
		return client.Log{}, err
	}
	data, size, err := readFrom(path, 0)
	if err != nil {
		return client.Log{}, err
	}
	lines := splitLines(data)
	if len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	return client.Log{Extension: name, Path: path, Lines: lines, Offset: size}, nil
}

// LogAfter returns the whole lines a package's log gained after offset,
// waiting up to wait for some. When the log is shorter than offset it
// started over (it is bounded and begins again with a marker line), and
// the answer reads it from its top with Reset set.
func (d *Daemon) LogAfter(ctx context.Context, name string, offset int64, wait time.Duration) (client.Log, error) {
	path, err := d.logPath(name)
	if err != nil {
		return client.Log{}, err
	}
	deadline := time.Now().Add(wait)
	for {
		res := client.Log{Extension: name, Path: path, Lines: []string{}}
		from := offset
		if st, err := os.Stat(path); err == nil && st.Size() < offset {
			from, res.Reset = 0, true
		}
		data, end, err := readFrom(path, from)
		if err != nil {
			return client.Log{}, err
		}
		start := end - int64(len(data))
		// Only whole lines: a line still being written comes next time.
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		} else {
			data = nil
		}
		res.Lines = splitLines(data)
		res.Offset = start + int64(len(data))
		if len(res.Lines) > 0 || res.Reset || !time.Now().Before(deadline) {
			return res, nil
		}
		select {
		case <-time.After(logPoll):
		case <-ctx.Done():
			return res, nil
		case <-d.closed:
			return res, nil
		}
	}
}

func (d *Daemon) logPath(name string) (string, error) {
	if _, ok := d.pkgs.get(name); !ok {
		return "", errUnknownExtension(name)
	}
	return d.dirs.ExtensionLog(name), nil
}

// readFrom reads at most maxLogRead bytes of path from offset, and the
// file's size. A log that does not exist yet reads as empty.
func readFrom(path string, offset int64) ([]byte, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading the log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if offset > st.Size() {
		offset = st.Size()
	}
	if st.Size()-offset > maxLogRead {
		offset = st.Size() - maxLogRead
	}
	data, err := io.ReadAll(io.NewSectionReader(f, offset, st.Size()-offset))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the log: %w", err)
	}
	return data, offset + int64(len(data)), nil
}

func splitLines(data []byte) []string {
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return []string{}
	}
	parts := bytes.Split(data, []byte("\n"))
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}
