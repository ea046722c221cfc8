//go:build !linux

package pause

import "time"

// For sleeps d with time.Sleep: the Linux poller's millisecond rounding is
// not known elsewhere. It never fails.
func For(d time.Duration) error {
	time.Sleep(d)
	return nil
}
