//go:build linux

package browser

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// sysProcAttr puts Chrome in its own process group, so Close can kill the
// whole tree, and has the kernel SIGKILL it when the thread that started it
// dies (see Process.run), so the browser never outlives cdpguard.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs Chrome's process group (its pgid is its pid).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// waitGroupGone polls until no live (non-zombie) process is left in Chrome's
// process group, so the profile directory is not written to while Close
// removes it. Zombies are ignored: a container's PID 1 may never reap them.
func waitGroupGone(cmd *exec.Cmd, limit time.Duration) error {
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(limit)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chrome processes %v still alive after SIGKILL", left)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live, non-zombie processes whose process group is
// pgid, read from /proc.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, err := procStat(pid)
		if err == nil && group == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// errBadStat means /proc/<pid>/stat did not parse.
var errBadStat = errors.New("malformed /proc stat")

// procStat returns the state and process group of pid from /proc/<pid>/stat.
// The command name may contain spaces and parentheses, so fields are counted
// after its last ')'.
func procStat(pid int) (byte, int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errBadStat
	}
	// After ") ": state ppid pgrp ...
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, errBadStat
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, errBadStat
	}
	return fields[0][0], pgrp, nil
}
