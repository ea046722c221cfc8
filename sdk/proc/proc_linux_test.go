//go:build linux

package proc

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

func TestParseReadsFieldsAfterACommandWithParentheses(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Info
		bad        bool
	}{
		{"a plain command", "42 (sleep) S 1 42 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 5234688 229 18446744073709551615",
			Info{State: 'S', PGID: 42, StartTicks: 123456}, false},
		{"a command holding ') (' and spaces", "42 (a) (b c) Z 1 77 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 99 5234688 229",
			Info{State: 'Z', PGID: 77, StartTicks: 99}, false},
		{"a line cut short", "42 (sleep) S 1 42", Info{}, true},
		{"no command", "42 sleep S 1 42", Info{}, true},
		{"a group that is not a number", "42 (sleep) S 1 x 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 99 5234688 229", Info{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse([]byte(tc.line))
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("parse = %+v, %v; want %+v (error: %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestStatTellsTheLiveFromTheGone(t *testing.T) {
	self, err := Stat(os.Getpid())
	if err != nil || self.Exited() || self.PGID == 0 || self.StartTicks == 0 {
		t.Errorf("Stat(self) = %+v, %v; want a live process with a group and a start time", self, err)
	}
	// Above the largest pid Linux gives (4194304), so no process has it.
	if _, err := Stat(1 << 23); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Stat of a pid no process has: %v, want ErrNoProcess", err)
	}
}

func TestGroupMembersListsAGroupAndHonoursTheStartBound(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("needs sleep on PATH")
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	info, err := Stat(pid)
	if err != nil || info.PGID != pid {
		t.Fatalf("Stat(leader) = %+v, %v; want its own group", info, err)
	}
	if got, err := GroupMembers(pid, info.StartTicks); err != nil || !slices.Equal(got, []int{pid}) {
		t.Errorf("GroupMembers(%d, its start) = %v, %v; want [%d]", pid, got, err, pid)
	}
	// Negative control: a bound after the leader's start leaves it out.
	if got, _ := GroupMembers(pid, info.StartTicks+1); len(got) != 0 {
		t.Errorf("GroupMembers with a later bound = %v, want none", got)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got, _ := GroupMembers(pid, 0); len(got) != 0 {
		t.Errorf("GroupMembers after the group ended = %v, want none", got)
	}
}

func TestBootIDIsSteady(t *testing.T) {
	a, b := BootID(), BootID()
	if a == "" || a != b {
		t.Errorf("BootID = %q then %q, want one non-empty id", a, b)
	}
}
