//go:build !linux

package proc

// Supported says process identity cannot be read here: this system has no
// /proc.
const Supported = false

// Stat answers ErrUnsupported.
func Stat(int) (Info, error) { return Info{}, ErrUnsupported }

// GroupMembers answers ErrUnsupported.
func GroupMembers(int, uint64) ([]int, error) { return nil, ErrUnsupported }

// BootID answers "".
func BootID() string { return "" }
