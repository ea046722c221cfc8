package pause

import (
	"syscall"
	"time"
)

// For sleeps d in the kernel (nanosleep), however short d is, resuming
// after a signal for what is left; d of zero or less returns at once. It
// returns the error of a nanosleep that failed for any reason but a
// signal.
func For(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for {
		err := syscall.Nanosleep(&ts, &ts)
		if err != syscall.EINTR {
			return err
		}
	}
}
