package main

import (
	"errors"
	"strings"
	"testing"
)

// flaky is a runner whose rounds fail the first fails times, each after
// adding a figure of its own.
type flaky struct {
	who   string
	fails int
	calls int
}

func (r *flaky) name() string { return r.who }

func (r *flaky) round(f figures) error {
	r.calls++
	if r.calls <= r.fails {
		f.add("echo_p50_us", -1)
		return errors.New("harness lost its reader")
	}
	f.add("echo_p50_us", 42)
	return nil
}

func (r *flaky) starts(figures) error { return nil }

// TestRunRoundRetriesABaselineOnceAndNeverOurs: a baseline's failed round
// runs once more, its figures dropped and the retry said; a second failure,
// or any failure of ours, is the run's error.
func TestRunRoundRetriesABaselineOnceAndNeverOurs(t *testing.T) {
	tests := []struct {
		who     string
		fails   int
		wantErr bool
		want    []float64
		said    bool
	}{
		{"library", 0, false, []float64{42}, false},
		{"library", 1, false, []float64{42}, true},
		{"library", 2, true, nil, true},
		{"ours", 1, true, nil, false},
	}
	for _, tt := range tests {
		r := &flaky{who: tt.who, fails: tt.fails}
		f := figures{}
		var log strings.Builder
		err := runRound(r, f, &log)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s failing %d: error %v, want error %v", tt.who, tt.fails, err, tt.wantErr)
		}
		if got := f["echo_p50_us"]; len(got) != len(tt.want) || len(got) == 1 && got[0] != tt.want[0] {
			t.Errorf("%s failing %d: figures %v, want %v (a failed attempt's are dropped)", tt.who, tt.fails, got, tt.want)
		}
		if said := strings.Contains(log.String(), "once more"); said != tt.said {
			t.Errorf("%s failing %d: log %q, want a retry said: %v", tt.who, tt.fails, log.String(), tt.said)
		}
	}
}
