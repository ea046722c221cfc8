//go:build race

package session

// raceEnabled passes GORACE to extensions a race-built host starts, so a
// test's race settings reach the race-built packages it runs.
const raceEnabled = true
