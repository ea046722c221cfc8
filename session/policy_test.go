package session

import (
	"testing"
	"time"
)

func TestRestartBackoffDoublesCapsAndResets(t *testing.T) {
	p := restartPolicy{b: Backoff{Min: 100 * time.Millisecond, Max: 30 * time.Second, ResetAfter: time.Minute}}
	quick := time.Second
	var got []time.Duration
	for i := 0; i < 11; i++ {
		got = append(got, p.afterCrash(quick))
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("crash %d waits %s, want %s (all: %v)", i+1, got[i], want[i]*time.Millisecond, got)
		}
	}
	// A process that stayed up a minute starts the backoff over.
	if d := p.afterCrash(time.Minute); d != 100*time.Millisecond {
		t.Fatalf("after a minute of uptime: %s", d)
	}
	// A failed restart doubles too.
	if d := p.afterFailedStart(); d != 200*time.Millisecond {
		t.Fatalf("after a failed start: %s", d)
	}
	if d := p.afterCrash(quick); d != 400*time.Millisecond {
		t.Fatalf("crash after a failed start: %s", d)
	}
}
