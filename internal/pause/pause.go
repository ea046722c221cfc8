// Package pause sleeps for short spans, as benchmarks that model an idle
// gap need. On Linux, Go's time.Sleep of anything under a millisecond
// returns after about a millisecond when no other timer is due (its poller
// waits in whole milliseconds: a 20 µs sleep measured 1.08 ms p50 on a
// 2-core VM), which turns a gap meant to be short into a long one.
package pause
