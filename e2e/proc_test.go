package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// proc names one process by pid and start time, so a reused pid is not
// mistaken for the process we saw.
type proc struct {
	pid   int
	start string
	cmd   string
}

// procStat reads the parent pid, state and start time from /proc/PID/stat.
func procStat(pid int) (ppid int, state byte, start string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", err
	}
	// The command name is in parentheses and may hold spaces; fields after
	// it are space separated: state, ppid, ..., starttime (field 22).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, "", fmt.Errorf("malformed stat for %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, "", fmt.Errorf("short stat for %d", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, "", fmt.Errorf("stat ppid for %d: %w", pid, err)
	}
	return ppid, f[0][0], f[19], nil
}

// cmdline returns a process's command line with spaces between arguments.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// descendants returns every live process below root in the parent chain.
func descendants(root int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, _, err := procStat(pid); err == nil {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []proc
	queue := append([]int(nil), kids[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if _, state, start, err := procStat(pid); err == nil && state != 'Z' {
			out = append(out, proc{pid: pid, start: start, cmd: cmdline(pid)})
		}
		queue = append(queue, kids[pid]...)
	}
	return out
}

// alive reports whether p still runs: same pid and start time, not a zombie.
func alive(p proc) bool {
	_, state, start, err := procStat(p.pid)
	return err == nil && start == p.start && state != 'Z' && state != 'X'
}
