//go:build !(linux || darwin || freebsd)

package pebblekv

import "errors"

// spaceDir stands for the store's directory where free space cannot be
// read: the reserve goes unchecked and Pebble's own error stands.
type spaceDir struct{}

func openSpaceDir(string) spaceDir { return spaceDir{} }

func (spaceDir) free(string) (int64, error) {
	return 0, errors.New("pebblekv: free space is not known on this system")
}

func (*spaceDir) close() {}
