//go:build !linux

package browser

import (
	"os/exec"
	"syscall"
	"time"
)

// sysProcAttr has no portable process-group or parent-death setting; on other
// systems the browser is only killed by Close, and may outlive a cdpguard
// that is killed outright.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the main Chrome process; without process groups its
// children are left to notice the browser's exit themselves.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// waitGroupGone has nothing to poll without /proc.
func waitGroupGone(*exec.Cmd, time.Duration) error { return nil }
