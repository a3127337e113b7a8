// Package procstat reads processes from Linux /proc for the e2e tests and
// the bench command: one parser of /proc/<pid>/stat and one walk of the
// process tree, so that "Chromium's processes below this pid" means the same
// thing in both. (internal/browser keeps its own, smaller reader: it needs
// only the process group, and production code does not import e2e.)
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat on
// Linux (100 on every architecture Go supports there).
const ClockTicks = 100.0

// Stat is the part of /proc/<pid>/stat the tests and the bench read.
type Stat struct {
	PID   int
	PPID  int
	State byte // R, S, D, Z (zombie), X (dead), ...
	// Start is the start time in clock ticks since boot, kept as text: with
	// PID it names one process, so a reused pid is not taken for it.
	Start string
	// CPUTicks is utime+stime+cutime+cstime: the process's CPU time and
	// that of the children it has waited for.
	CPUTicks float64
}

// Live reports whether the process is neither a zombie nor dead.
func (s Stat) Live() bool { return s.State != 'Z' && s.State != 'X' }

// CPUSeconds is CPUTicks in seconds.
func (s Stat) CPUSeconds() float64 { return s.CPUTicks / ClockTicks }

// Read parses /proc/<pid>/stat. The command name is in parentheses and may
// hold spaces and parentheses, so fields are counted after its last ')'.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("malformed stat for %d", pid)
	}
	// After ") ": state(0) ppid(1) ... utime(11) stime(12) cutime(13)
	// cstime(14) ... starttime(19).
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("short stat for %d", pid)
	}
	s := Stat{PID: pid, State: f[0][0], Start: f[19]}
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("stat ppid for %d: %w", pid, err)
	}
	for _, k := range []int{11, 12, 13, 14} {
		v, err := strconv.ParseFloat(f[k], 64)
		if err != nil {
			return Stat{}, fmt.Errorf("stat cpu times for %d: %w", pid, err)
		}
		s.CPUTicks += v
	}
	return s, nil
}

// Below lists every process below root in the parent chain (children
// first, then theirs), zombies included: callers that want live ones check
// Live. Processes that end while /proc is read are left out.
func Below(root int) []Stat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]Stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(pid); err == nil {
			kids[s.PPID] = append(kids[s.PPID], s)
		}
	}
	var out []Stat
	seen := map[int]bool{root: true} // a pid reused mid-read cannot loop the walk
	queue := append([]Stat(nil), kids[root]...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s.PID] {
			continue
		}
		seen[s.PID] = true
		out = append(out, s)
		queue = append(queue, kids[s.PID]...)
	}
	return out
}

// RSS returns the resident set size of pid in bytes (VmRSS in
// /proc/<pid>/status).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("procstat: VmRSS of %d: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("procstat: no VmRSS for %d", pid)
}
