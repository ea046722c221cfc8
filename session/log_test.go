package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lines are n numbered lines from first.
func lines(first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestStderrLogKeepsTheRateAndCountsWhatItDrops(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	type read struct {
		at   time.Duration
		data string
	}
	for _, tc := range []struct {
		name  string
		rate  LogRate
		reads []read
		want  string
	}{
		{"under_the_rate", LogRate{Lines: 10, Bytes: 1 << 20},
			[]read{{0, lines(0, 5)}, {time.Millisecond, lines(5, 5)}},
			lines(0, 10)},
		{"over_the_line_rate", LogRate{Lines: 3, Bytes: 1 << 20},
			[]read{{0, lines(0, 10)}, {1500 * time.Millisecond, lines(10, 1)}},
			lines(0, 3) + "[open-conduit] dropped 7 lines (49 bytes) of stderr: over the log's rate of 3 lines or 1048576 bytes a second\n" + lines(10, 1)},
		{"over_the_byte_rate", LogRate{Lines: 100, Bytes: 20},
			[]read{{0, lines(0, 4)}, {time.Second, lines(4, 1)}},
			lines(0, 2) + "[open-conduit] dropped 2 lines (14 bytes) of stderr: over the log's rate of 100 lines or 20 bytes a second\n" + lines(4, 1)},
		{"a_line_split_across_reads", LogRate{Lines: 2, Bytes: 1 << 20},
			[]read{{0, "line 0\nli"}, {time.Millisecond, "ne 1\nline 2\nline 3\n"}, {2 * time.Second, "end\n"}},
			lines(0, 2) + "[open-conduit] dropped 2 lines (14 bytes) of stderr: over the log's rate of 2 lines or 1048576 bytes a second\nend\n"},
		{"a_dropped_line_split_across_reads", LogRate{Lines: 1, Bytes: 1 << 20},
			[]read{{0, "line 0\nline"}, {time.Millisecond, " 1\n"}, {2 * time.Second, "end\n"}},
			lines(0, 1) + "[open-conduit] dropped 1 lines (7 bytes) of stderr: over the log's rate of 1 lines or 1048576 bytes a second\nend\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.log")
			l, err := openStderrLog(path, 1<<20, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.reads {
				l.ingest([]byte(r.data), t0.Add(r.at))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("the log is\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestStderrTailKeepsTheLastLinesEvenWhenDropped(t *testing.T) {
	l, err := openStderrLog("", 0, LogRate{Lines: 1, Bytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l.ingest([]byte(lines(0, 1000)), time.Now())
	l.ingest([]byte("unfinished"), time.Now())
	tail := l.Tail()
	want := strings.Split(strings.TrimSpace(lines(989, 11)), "\n")
	want = append(want, "unfinished")
	if strings.Join(tail, "|") != strings.Join(want, "|") {
		t.Fatalf("tail %q, want %q", tail, want)
	}
}
