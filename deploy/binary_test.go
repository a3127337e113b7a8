package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// flagInfo is one flag of `cdpguard serve` as its help prints it.
type flagInfo struct {
	name, def string
	env       []string
}

// cdpguardBinary builds ./cmd/cdpguard once per test binary into a
// directory every user can read (TestImageEnvironmentServes runs it as the
// image's uid); TestMain removes it. scripts/test.sh builds it once for
// every package that runs it and passes it in CDPGUARD_TEST_BIN, in a
// directory every user can read too.
var cdpguardBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("CDPGUARD_TEST_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("CDPGUARD_TEST_BIN: %w", err)
		}
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "cdpguard-deploy-")
	if err != nil {
		return "", err
	}
	binDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "cdpguard")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cdpguard")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &helpError{err: err, out: string(out)}
	}
	return bin, nil
})

// binDir is where cdpguardBinary built, removed by TestMain.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serveFlags are the flags of `cdpguard serve`, read once per test binary
// from the help of the binary built from this repository (so the checks
// follow the code, not a copy of its defaults).
var serveFlags = sync.OnceValues(func() (map[string]flagInfo, error) {
	bin, err := cdpguardBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	if err != nil {
		return nil, &helpError{err: err, out: string(out)}
	}
	return parseHelp(string(out)), nil
})

type helpError struct {
	err error
	out string
}

func (e *helpError) Error() string { return "cdpguard: " + e.err.Error() + "\n" + e.out }

var (
	helpFlagRE    = regexp.MustCompile(`^\s+--([a-z0-9-]+)`)
	helpDefaultRE = regexp.MustCompile(`\(default: ([^)]*)\)`)
	helpEnvRE     = regexp.MustCompile(`\[(\$[A-Z0-9_]+(?:, \$[A-Z0-9_]+)*)\]\s*$`)
)

// parseHelp reads urfave/cli's OPTIONS lines:
// `--listen value   endpoint address (default: "127.0.0.1:9222") [$CDPGUARD_LISTEN]`.
func parseHelp(help string) map[string]flagInfo {
	flags := map[string]flagInfo{}
	for line := range strings.Lines(help) {
		m := helpFlagRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := flagInfo{name: m[1]}
		if d := helpDefaultRE.FindAllStringSubmatch(line, -1); d != nil {
			f.def = strings.Trim(d[len(d)-1][1], `"`)
		}
		if e := helpEnvRE.FindStringSubmatch(line); e != nil {
			for _, v := range strings.Split(e[1], ", ") {
				f.env = append(f.env, strings.TrimPrefix(v, "$"))
			}
		}
		flags[f.name] = f
	}
	return flags
}

// binaryFlags returns serveFlags or fails t.
func binaryFlags(t *testing.T) map[string]flagInfo {
	t.Helper()
	flags, err := serveFlags()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listen", "session-header", "allow"} {
		if _, ok := flags[want]; !ok {
			t.Fatalf("cdpguard serve --help has no --%s: the help format changed? parsed %d flags", want, len(flags))
		}
	}
	return flags
}

// envNames maps each environment variable of the binary to its flag.
func envNames(flags map[string]flagInfo) map[string]string {
	out := map[string]string{}
	for _, f := range flags {
		for _, e := range f.env {
			out[e] = f.name
		}
	}
	return out
}

// checkEnv fails t for every name in env that the binary does not read.
func checkEnv(t *testing.T, where string, env []string, flags map[string]flagInfo) {
	t.Helper()
	known := envNames(flags)
	for _, name := range env {
		if _, ok := known[name]; ok {
			continue
		}
		t.Errorf("%s sets %s, which cdpguard serve does not read", where, name)
	}
}

// listenPort is the port of --listen's value host:port.
func listenPort(t *testing.T, addr string) string {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		t.Fatalf("listen address %q has no port", addr)
	}
	return addr[i+1:]
}

// nginxVar is ingress-nginx's variable for request header h.
func nginxVar(h string) string {
	return "$http_" + strings.ReplaceAll(strings.ToLower(h), "-", "_")
}
