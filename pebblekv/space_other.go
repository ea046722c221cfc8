//go:build !unix

package pebblekv

import "errors"

// freeSpace cannot be read here: the reserve goes unchecked and Pebble's
// own error stands.
func freeSpace(string) (int64, error) {
	return 0, errors.New("pebblekv: free space is not known on this system")
}
