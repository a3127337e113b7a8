package deploy

import (
	"encoding/json"
	"os"
	"path"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile splits a Dockerfile into instructions: comments and
// blank lines dropped, lines ending in a backslash joined. (Enough for
// this repository's Dockerfile; heredocs and parser directives are not
// used there and fail the checks below if they appear.)
func parseDockerfile(src string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	return out
}

// envPairs reads `ENV A=1 B="two"` into a map (the key=value form only).
func envPairs(t *testing.T, args string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rest := strings.TrimSpace(args); rest != ""; rest = strings.TrimSpace(rest) {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || strings.ContainsAny(key, " \t") {
			t.Fatalf("ENV %q: want KEY=VALUE pairs", args)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				t.Fatalf("ENV %q: unterminated quote", args)
			}
			val, rest = after[1:end+1], after[end+2:]
		} else {
			val, rest, _ = strings.Cut(after, " ")
		}
		out[key] = val
	}
	return out
}

// TestDockerfile checks the repository's Dockerfile for what issue 11 and
// issue 14 ask: two stages (Go build, Debian bookworm-slim with Debian's
// chromium), a non-root user, a HEALTHCHECK on /readyz, the deployment's
// environment names (all read by the binary), and an exec-form ENTRYPOINT
// that is the cdpguard binary itself, so SIGTERM reaches it.
func TestDockerfile(t *testing.T) {
	flags := binaryFlags(t)
	src, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(string(src))
	for _, in := range ins {
		if strings.Contains(in.args, "no-sandbox") {
			t.Errorf("line %d turns Chromium's sandbox off; the image runs as a non-root user to keep it", in.line)
		}
	}
	var stages []string
	final := -1
	for i, in := range ins {
		if in.cmd == "FROM" {
			stages = append(stages, in.args)
			final = i
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got FROM %v", stages)
	}
	if f := strings.Fields(stages[0]); !strings.HasPrefix(f[0], "golang:") || len(f) != 3 || !strings.EqualFold(f[1], "AS") {
		t.Errorf("first stage %q: want golang:... AS <name>", stages[0])
	}
	if stages[len(stages)-1] != "debian:bookworm-slim" {
		t.Errorf("final stage %q: want debian:bookworm-slim", stages[len(stages)-1])
	}
	env := map[string]string{}
	var user, entrypoint, healthcheck, expose string
	var installsChromium, copiesBinary bool
	for _, in := range ins[final+1:] {
		switch in.cmd {
		case "RUN":
			if strings.Contains(in.args, "apt-get install") && strings.Contains(in.args, " chromium") {
				installsChromium = true
			}
		case "COPY":
			if strings.HasPrefix(in.args, "--from=") && strings.Contains(in.args, "cdpguard") {
				copiesBinary = true
			}
		case "USER":
			user = in.args
		case "ENV":
			for k, v := range envPairs(t, in.args) {
				env[k] = v
			}
		case "ENTRYPOINT":
			entrypoint = in.args
		case "HEALTHCHECK":
			healthcheck = in.args
		case "EXPOSE":
			expose = in.args
		case "ONBUILD", "SHELL", "STOPSIGNAL":
			t.Errorf("line %d: %s is not expected here", in.line, in.cmd)
		}
	}
	if !installsChromium {
		t.Error("the final stage does not apt-get install Debian's chromium")
	}
	if !copiesBinary {
		t.Error("the final stage does not COPY --from the build stage's cdpguard")
	}
	if name, _, _ := strings.Cut(user, ":"); user == "" || name == "root" || name == "0" {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if !strings.Contains(healthcheck, "/readyz") {
		t.Errorf("HEALTHCHECK %q does not probe /readyz", healthcheck)
	}
	var argv []string
	if err := json.Unmarshal([]byte(entrypoint), &argv); err != nil || len(argv) == 0 {
		t.Errorf("ENTRYPOINT %q: want the exec (JSON array) form, so cdpguard is PID 1 and gets SIGTERM", entrypoint)
	} else if path.Base(argv[0]) != "cdpguard" {
		t.Errorf("ENTRYPOINT %v: want the cdpguard binary itself, not %s (a shell or wrapper may not pass SIGTERM on)", argv, argv[0])
	}
	for _, name := range []string{"ALLOWED_ORIGINS", "BLOCKED_ORIGINS", "EXTRA_INSTRUCTIONS", "SEARCH_URL", "SESSION_HEADER", "SESSION_IDLE_SECONDS", "CDPGUARD_LISTEN", "CDPGUARD_PUBLIC_HOST"} {
		if _, ok := env[name]; !ok {
			t.Errorf("ENV does not name %s", name)
		}
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	checkEnv(t, "Dockerfile", names, flags)
	if env["CDPGUARD_LISTEN"] != "0.0.0.0:9222" {
		t.Errorf("CDPGUARD_LISTEN=%q, want 0.0.0.0:9222", env["CDPGUARD_LISTEN"])
	}
	if env["CDPGUARD_PUBLIC_HOST"] != "cdpguard" {
		t.Errorf("CDPGUARD_PUBLIC_HOST=%q, want cdpguard (the compose service name)", env["CDPGUARD_PUBLIC_HOST"])
	}
	if h := env["SESSION_HEADER"]; h != flags["session-header"].def {
		t.Errorf("SESSION_HEADER=%q, the binary's default is %q", h, flags["session-header"].def)
	}
	if port := listenPort(t, env["CDPGUARD_LISTEN"]); expose != port || !strings.Contains(healthcheck, ":"+port+"/") {
		t.Errorf("EXPOSE %q and HEALTHCHECK %q should use the listen port %s", expose, healthcheck, port)
	}
}
