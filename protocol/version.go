package protocol

import (
	"fmt"
	"slices"
)

// Versions are the protocol versions this build speaks, oldest first. A
// version changes only for a breaking change; additive methods and manifest
// fields ship without one.
var Versions = []int{1}

// Version is the newest protocol version this build speaks.
const Version = 1

// Negotiate picks the highest version present in both lists. No version in
// common is ErrUnsupportedProtocolVersion, naming both lists so the operator
// sees what to upgrade.
func Negotiate(ours, theirs []int) (int, error) {
	best := 0
	for _, v := range theirs {
		if v > best && slices.Contains(ours, v) {
			best = v
		}
	}
	if best == 0 {
		return 0, Errorf(ErrUnsupportedProtocolVersion,
			"no protocol version in common: this side speaks %v, the other %v; build against an SDK release that speaks one of %v",
			ours, theirs, ours)
	}
	return best, nil
}

// SupportsVersion reports whether this build speaks version v.
func SupportsVersion(v int) bool { return slices.Contains(Versions, v) }

func versionsString(vs []int) string { return fmt.Sprint(vs) }
