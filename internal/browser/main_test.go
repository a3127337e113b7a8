package browser

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// lockHolderEnv, when set, makes the test binary a lock holder instead of a
// test run: it takes the named file's flock, says "locked" and waits to be
// killed. TestSweepProfiles kills it as the OOM killer would kill a daemon:
// one process, so once its Wait returns nothing holds the lock (flock(1)'s
// child could outlive flock's own Wait while it died).
const lockHolderEnv = "CDPGUARD_TEST_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(lockHolderEnv); path != "" {
		os.Exit(holdLock(path))
	}
	goleak.VerifyTestMain(m)
}

// holdLock takes path's lock, says so on stdout, and holds it until stdin
// closes or the process is killed.
func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
