package runner

import (
	"os"
	"testing"
)

func TestParseStatReadsFieldsAfterACommandWithParentheses(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       procInfo
		bad        bool
	}{
		{"a plain command", "42 (sleep) S 1 42 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 5234688 229 18446744073709551615",
			procInfo{state: 'S', pgrp: 42, start: 123456}, false},
		{"a command holding ') (' and spaces", "42 (a) (b c) Z 1 77 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 99 5234688 229",
			procInfo{state: 'Z', pgrp: 77, start: 99}, false},
		{"a line cut short", "42 (sleep) S 1 42", procInfo{}, true},
		{"no command", "42 sleep S 1 42", procInfo{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.line))
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("parseStat = %+v, %v; want %+v (error: %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestReadProcTellsTheLiveFromTheGone(t *testing.T) {
	self, err := readProc(os.Getpid())
	if err != nil || self.dead() || self.pgrp == 0 || self.start == 0 {
		t.Errorf("readProc(self) = %+v, %v; want a live process with a group and a start time", self, err)
	}
	// Above the largest pid Linux gives (4194304), so no process has it.
	if _, err := readProc(1 << 23); err != errNoProcess {
		t.Errorf("readProc of a pid no process has: %v, want errNoProcess", err)
	}
}
