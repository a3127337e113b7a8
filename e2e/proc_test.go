package e2e

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/cdpguard/cdpguard/e2e/procstat"
)

// proc names one process by pid and start time, so a reused pid is not
// mistaken for the process we saw.
type proc struct {
	pid   int
	start string
	cmd   string
}

// cmdline returns a process's command line with spaces between arguments.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// descendants returns every live process below root in the parent chain.
func descendants(root int) []proc {
	var out []proc
	for _, s := range procstat.Below(root) {
		if s.State != 'Z' {
			out = append(out, proc{pid: s.PID, start: s.Start, cmd: cmdline(s.PID)})
		}
	}
	return out
}

// alive reports whether p still runs: same pid and start time, not a zombie.
func alive(p proc) bool {
	s, err := procstat.Read(p.pid)
	return err == nil && s.Start == p.start && s.Live()
}
