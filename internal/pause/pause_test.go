package pause

import (
	"testing"
	"time"
)

// TestForSleepsAtLeastWhatItIsAsked holds the lower bound, the one a
// loaded machine cannot break: how much longer a pause runs is the
// benchmarks' to report.
func TestForSleepsAtLeastWhatItIsAsked(t *testing.T) {
	for _, asked := range []time.Duration{time.Microsecond, 50 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := For(asked); err != nil {
			t.Fatalf("For(%v): %v", asked, err)
		}
		if took := time.Since(start); took < asked {
			t.Errorf("For(%v) returned after %v", asked, took)
		}
	}
}

// TestForNothingReturnsAtOnce: a zero or negative span is no pause and no
// error (nanosleep itself refuses a negative one).
func TestForNothingReturnsAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Millisecond} {
		if err := For(d); err != nil {
			t.Errorf("For(%v): %v", d, err)
		}
	}
}
