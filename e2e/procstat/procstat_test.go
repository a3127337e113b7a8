package procstat

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestBelow: a grandchild whose command name holds ") " is found below this
// process with its parent, and its stat parses; once killed and reaped it is
// gone.
func TestBelow(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", `"$0" 30 & wait`, odd)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })

	var grandchild Stat
	deadline := time.Now().Add(10 * time.Second)
	for grandchild.PID == 0 {
		for _, s := range Below(os.Getpid()) {
			if s.PPID == sh.Process.Pid {
				grandchild = s
			}
		}
		if grandchild.PID == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the shell's child did not appear below this process within 10s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pids := []int{}
	for _, s := range Below(os.Getpid()) {
		pids = append(pids, s.PID)
	}
	if !slices.Contains(pids, sh.Process.Pid) {
		t.Errorf("Below(self) = %v, missing the shell %d", pids, sh.Process.Pid)
	}
	again, err := Read(grandchild.PID)
	if err != nil {
		t.Fatalf("Read of a process named %q: %v", filepath.Base(odd), err)
	}
	if again.Start != grandchild.Start || again.PPID != sh.Process.Pid || !again.Live() {
		t.Errorf("Read = %+v, want the same start %s, parent %d, live", again, grandchild.Start, sh.Process.Pid)
	}
	for spin := time.Now().Add(2 * time.Second); ; { // burn a tick of CPU, then see it counted
		self, err := Read(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if self.CPUSeconds() > 0 {
			break
		}
		if time.Now().After(spin) {
			t.Errorf("no CPU time counted for this process after 2s of spinning: %+v", self)
			break
		}
	}
	_ = sh.Process.Kill()
	_ = sh.Wait()
	if p, err := os.FindProcess(grandchild.PID); err == nil {
		_ = p.Kill() // orphaned to init, which reaps it
	}
	for time.Now().Before(deadline) {
		if s, err := Read(grandchild.PID); err != nil || s.Start != grandchild.Start || !s.Live() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the killed grandchild still reads as live after 10s")
}
