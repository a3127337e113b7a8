package cdptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// DaemonEnv names the cdpguard binary that scripts/test.sh builds once for
// every package that runs the daemon as a program (e2e and e2e/bench here;
// deploy/, a module of its own, reads it too): when each built its own, three
// cold builds ran at once beside the race build on a fresh machine.
const DaemonEnv = "CDPGUARD_TEST_BIN"

// Daemon returns the binary DaemonEnv names, or builds one into dir.
func Daemon(ctx context.Context, dir string) (string, error) {
	if bin := os.Getenv(DaemonEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", DaemonEnv, err)
		}
		return bin, nil
	}
	return BuildDaemon(ctx, dir)
}

// BuildDaemon compiles ./cmd/cdpguard into dir, from any directory inside
// the module. Its bound is generous: on a fresh machine a cold build beside
// other work takes minutes.
func BuildDaemon(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "cdpguard")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cdpguard/cdpguard/cmd/cdpguard")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/cdpguard: %w\n%s", err, out)
	}
	return bin, nil
}
