// Command cdpguard puts a domain allowlist around a Chromium browser driven
// over the Chrome DevTools Protocol. See the README for the quick start.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/mcpserver"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
	"github.com/cdpguard/cdpguard/internal/wsagent"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "cdpguard:", describe(err))
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "cdpguard",
		Usage: "a domain allowlist around a Chromium browser driven over CDP",
		// Chrome flags carry commas (--host-resolver-rules, --disable-features):
		// repeatable flags must never be split on them.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			{
				Name:   "serve",
				Usage:  "launch a managed Chromium and serve a guarded CDP endpoint",
				Flags:  append(commonFlags(), launchFlags()...),
				Action: serve,
			},
			{
				Name:   "attach",
				Usage:  "guard a running browser started with --remote-debugging-port",
				Flags:  append(commonFlags(), &cli.StringFlag{Name: "browser-url", Usage: "the browser's http://host:port or ws:// URL", EnvVars: []string{"CDPGUARD_BROWSER_URL"}, Required: true}),
				Action: attach,
			},
			readCommand(),
			{
				Name:      "check",
				Usage:     "print the verdict and reason for each URL",
				ArgsUsage: "URL...",
				Flags:     append(policyFlags(), &cli.StringFlag{Name: "group", Usage: "with --policy-file: judge as a user of this group"}),
				Action:    check,
			},
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "cdpguard", buildVersion())
					return nil
				},
			},
		},
	}
}

func policyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "allow", Usage: "allowed origins (';', ',' or newline separated; repeatable)", EnvVars: []string{"ALLOWED_ORIGINS"}},
		&cli.StringSliceFlag{Name: "block", Usage: "blocked origins, checked first", EnvVars: []string{"BLOCKED_ORIGINS"}},
		&cli.StringFlag{Name: "policy-file", Usage: "YAML file with allow, block, instructions and groups, reloaded live when it changes and on SIGHUP; then the one source of the policy (--allow, --block and --instructions are refused)", EnvVars: []string{"CDPGUARD_POLICY_FILE"}},
	}
}

// errPolicyFlags is returned when --policy-file comes with a flag or
// variable it replaces: the file is the one source of the policy.
var errPolicyFlags = errors.New("with --policy-file the policy comes from the file only")

// checkPolicyFlags refuses --allow, --block and --instructions (or their
// environment variables) next to --policy-file, naming what to move.
func checkPolicyFlags(c *cli.Context) error {
	if c.String("policy-file") == "" {
		return nil
	}
	// An empty value (the image's ALLOWED_ORIGINS="") sets nothing, so it
	// does not compete with the file.
	for _, f := range []struct{ flag, env, key string }{
		{"allow", "ALLOWED_ORIGINS", "allow"},
		{"block", "BLOCKED_ORIGINS", "block"},
		{"instructions", "EXTRA_INSTRUCTIONS", "instructions"},
	} {
		if f.flag == "instructions" && c.String(f.flag) != "" || f.flag != "instructions" && nonEmpty(c.StringSlice(f.flag)) {
			return fmt.Errorf("%w: --%s (or %s) is set; put it in the file as %s: and unset it", errPolicyFlags, f.flag, f.env, f.key)
		}
	}
	return nil
}

func commonFlags() []cli.Flag {
	return append(policyFlags(),
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9222", Usage: "endpoint address", EnvVars: []string{"CDPGUARD_LISTEN"}},
		&cli.StringFlag{Name: "egress-listen", Value: "127.0.0.1:0", Usage: "loopback address of the shared egress proxy listener (fix it to start your own Chrome with --proxy-server=http://ADDRESS)", EnvVars: []string{"CDPGUARD_EGRESS_LISTEN"}},
		&cli.StringSliceFlag{Name: "host-map", Usage: "PATTERN=IP name mapping for Chrome and the egress proxy (repeatable)", EnvVars: []string{"CDPGUARD_HOST_MAP"}},
		&cli.StringFlag{Name: "instructions", Usage: "text added to the explanation page of a blocked navigation", EnvVars: []string{"EXTRA_INSTRUCTIONS"}},
		&cli.StringFlag{Name: "search-url", Usage: "prefix of search result pages: the reader notes on them that search results are not a source", EnvVars: []string{"SEARCH_URL"}},
		&cli.StringFlag{Name: "blocked-navigation", Value: cdpguard.DefaultBlockedNavigation, Usage: "page (403 explanation page) or error (net::ERR_BLOCKED_BY_CLIENT)", EnvVars: []string{"CDPGUARD_BLOCKED_NAVIGATION"}},
		&cli.DurationFlag{Name: "dialog-grace", Value: dialogs.DefaultGrace, Usage: "how long a CDP agent with Page events enabled may take to answer a JavaScript dialog before the guard does; 0: the guard answers at once (MCP tools use --mcp-dialog-wait)", EnvVars: []string{"CDPGUARD_DIALOG_GRACE"}},
		&cli.StringSliceFlag{Name: "public-host", Usage: "extra Host names the endpoint accepts (repeatable)", EnvVars: []string{"CDPGUARD_PUBLIC_HOST"}},
		&cli.StringFlag{Name: "download-dir", Usage: "downloads go to a per-user directory under it (default: downloads denied)", EnvVars: []string{"CDPGUARD_DOWNLOAD_DIR"}},
		&cli.Int64Flag{Name: "download-max-bytes", Value: cdpguard.DefaultDownloadMaxBytes, Usage: "cap on each user's download directory; negative: no cap", EnvVars: []string{"CDPGUARD_DOWNLOAD_MAX_BYTES"}},
		&cli.Int64Flag{Name: "agent-queue-bytes", Value: cdpguard.DefaultAgentQueueBytes, Usage: "bound on replies and events held for one agent connection: its commands wait (back-pressure) past an eighth of it, and it is closed past it", EnvVars: []string{"CDPGUARD_AGENT_QUEUE_BYTES"}},
		&cli.Int64Flag{Name: "user-queue-bytes", Value: cdpguard.DefaultUserQueueBytes, Usage: "the same bound for all of one user's connections together (back-pressure past a quarter)", EnvVars: []string{"CDPGUARD_USER_QUEUE_BYTES"}},
		&cli.Int64Flag{Name: "agent-total-bytes", Value: bounds.DefaultTotalBytes, Usage: "one byte budget for all agents: replies and events queued plus messages and /mcp bodies being received; past it a message's connection is closed naming the bound (negative: none)", EnvVars: []string{"CDPGUARD_AGENT_TOTAL_BYTES"}},
		&cli.Int64Flag{Name: "user-receive-bytes", Value: bounds.DefaultUserReceiveBytes, Usage: "one user's share of --agent-total-bytes for messages and /mcp bodies being received (negative: none)", EnvVars: []string{"CDPGUARD_USER_RECEIVE_BYTES"}},
		&cli.DurationFlag{Name: "agent-receive-timeout", Value: wsagent.DefaultReceiveTimeout, Usage: "an agent message must arrive within this plus 1s per MiB received from its first byte; past it the connection is closed naming the bound", EnvVars: []string{"CDPGUARD_AGENT_RECEIVE_TIMEOUT"}},
		&cli.IntFlag{Name: "browser-message-bytes", Value: cdpguard.DefaultBrowserMessageBytes, Usage: "bound on one message read from the browser: a larger answer becomes a CDP error naming it, a larger event is dropped", EnvVars: []string{"CDPGUARD_BROWSER_MESSAGE_BYTES"}},
		&cli.IntFlag{Name: "max-tabs-per-user", Value: cdpguard.DefaultMaxTabsPerUser, Usage: "open tabs one user may have; more are refused naming the cap (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_TABS_PER_USER"}},
		&cli.IntFlag{Name: "max-contexts-per-user", Value: cdpguard.DefaultMaxContextsPerUser, Usage: "browser contexts one user may create besides its own (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_CONTEXTS_PER_USER"}},
		&cli.IntFlag{Name: "max-users", Value: cdpguard.DefaultMaxUsers, Usage: "users with a browser context at once; a new user past it is refused naming the cap, existing users keep working (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_USERS"}},
		&cli.IntFlag{Name: "max-contexts", Value: cdpguard.DefaultMaxContexts, Usage: "browser contexts of all users together (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_CONTEXTS"}},
		&cli.IntFlag{Name: "max-tabs", Value: cdpguard.DefaultMaxTabs, Usage: "open tabs of all users together; past it a new tab is refused naming the cap, a popup closed (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_TABS"}},
		&cli.IntFlag{Name: "max-connections-per-user", Value: cdpguard.DefaultMaxConnsPerUser, Usage: "agent connections (CDP WebSockets, MCP) one user may have at once (negative: no cap)", EnvVars: []string{"CDPGUARD_MAX_CONNECTIONS_PER_USER"}},
		&cli.IntFlag{Name: "session-header-max-bytes", Value: cdpguard.DefaultSessionHeaderBytes, Usage: "longest session header value; a longer one is refused with 431 (negative: no cap)", EnvVars: []string{"CDPGUARD_SESSION_HEADER_MAX_BYTES"}},
		&cli.Float64Flag{Name: "new-users-per-second", Value: cdpguard.DefaultNewUsersPerSecond, Usage: "rate of new users (each a browser context to make); past it, and its burst, a new user is refused with 429 (negative: no cap)", EnvVars: []string{"CDPGUARD_NEW_USERS_PER_SECOND"}},
		&cli.IntFlag{Name: "new-users-burst", Value: cdpguard.DefaultNewUsersBurst, Usage: "new users at once before --new-users-per-second applies", EnvVars: []string{"CDPGUARD_NEW_USERS_BURST"}},
		&cli.StringFlag{Name: "upload-dir", Usage: "the only directory files may be uploaded from (default: uploads of local files refused)", EnvVars: []string{"CDPGUARD_UPLOAD_DIR"}},
		&cli.StringFlag{Name: "session-header", Value: cdpguard.DefaultSessionHeader, Usage: "request header that keys a user (one browser context per user)", EnvVars: []string{"SESSION_HEADER"}},
		&cli.BoolFlag{Name: "require-session-header", Usage: "refuse connections without the session header", EnvVars: []string{"CDPGUARD_REQUIRE_SESSION_HEADER"}},
		&cli.IntFlag{Name: "session-idle", Value: int(cdpguard.DefaultSessionIdle / time.Second), Usage: "seconds without connection or activity after which a user's contexts are disposed (0: never)", EnvVars: []string{"SESSION_IDLE_SECONDS"}},
		&cli.StringSliceFlag{Name: "allow-private", Usage: "CIDR the egress proxy may dial although it is loopback/private/link-local (repeatable)", EnvVars: []string{"CDPGUARD_ALLOW_PRIVATE"}},
		&cli.StringFlag{Name: "service-workers", Value: cdpguard.DefaultServiceWorkers, Usage: "block (registration refused) or guard (run, all traffic judged)", EnvVars: []string{"CDPGUARD_SERVICE_WORKERS"}},
		&cli.BoolFlag{Name: "controls", Usage: "show a human the guard in every page: a badge, its panel, and an allow-for-this-session button on the explanation page (default: on with --headed and in attach, off in headless serve)", EnvVars: []string{"CDPGUARD_CONTROLS"}},
		&cli.BoolFlag{Name: "mcp", Value: true, Usage: "serve the MCP server at /mcp", EnvVars: []string{"CDPGUARD_MCP"}},
		&cli.DurationFlag{Name: "mcp-call-timeout", Value: mcpserver.DefaultCallTimeout, Usage: "bound of every MCP tool call; a call that hits it says what did not finish", EnvVars: []string{"CDPGUARD_MCP_CALL_TIMEOUT"}},
		&cli.DurationFlag{Name: "mcp-dialog-wait", Value: mcpserver.DefaultDialogWait, Usage: "how long a dialog on an MCP-driven tab waits for browser_handle_dialog before the guard dismisses it", EnvVars: []string{"CDPGUARD_MCP_DIALOG_WAIT"}},
		&cli.IntFlag{Name: "mcp-image-max-bytes", Value: mcpserver.DefaultImageMaxBytes, Usage: "bound of an MCP image result, base64-encoded bytes", EnvVars: []string{"CDPGUARD_MCP_IMAGE_MAX_BYTES"}},
		&cli.IntFlag{Name: "mcp-image-max-side", Value: mcpserver.DefaultImageMaxSide, Usage: "bound of an MCP image result's long side, pixels", EnvVars: []string{"CDPGUARD_MCP_IMAGE_MAX_SIDE"}},
		&cli.IntFlag{Name: "mcp-max-sessions", Value: mcpserver.DefaultMaxSessions, Usage: "open MCP sessions in all; an initialize past it is refused (503) naming the cap (negative: no cap)", EnvVars: []string{"CDPGUARD_MCP_MAX_SESSIONS"}},
		&cli.IntFlag{Name: "mcp-max-sessions-per-user", Value: mcpserver.DefaultMaxSessionsPerUser, Usage: "open MCP sessions per user; an initialize past it is refused (429) naming the cap (negative: no cap)", EnvVars: []string{"CDPGUARD_MCP_MAX_SESSIONS_PER_USER"}},
		&cli.DurationFlag{Name: "mcp-session-idle", Value: mcpserver.DefaultSessionIdle, Usage: "an MCP session without requests for this long is closed", EnvVars: []string{"CDPGUARD_MCP_SESSION_IDLE"}},
		&cli.IntFlag{Name: "mcp-max-bodies", Value: mcpserver.DefaultMaxBodies, Usage: "/mcp request bodies read at once in all; past it a body not arrived within 1s gets 503 naming the cap (negative: no cap)", EnvVars: []string{"CDPGUARD_MCP_MAX_BODIES"}},
		&cli.IntFlag{Name: "mcp-max-bodies-per-user", Value: mcpserver.DefaultMaxBodiesPerUser, Usage: "/mcp request bodies read at once per user; past it a body not arrived within 1s gets 429 naming the cap (negative: no cap)", EnvVars: []string{"CDPGUARD_MCP_MAX_BODIES_PER_USER"}},
		&cli.DurationFlag{Name: "mcp-body-timeout", Value: mcpserver.DefaultBodyTimeout, Usage: "bound on reading one /mcp request body (408 past it)", EnvVars: []string{"CDPGUARD_MCP_BODY_TIMEOUT"}},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", EnvVars: []string{"CDPGUARD_LOG_FORMAT"}},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"CDPGUARD_LOG_LEVEL"}},
	)
}

func launchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "chrome", Usage: "browser binary (default: chromium, chromium-browser or google-chrome on PATH)", EnvVars: []string{"CHROME_PATH"}},
		&cli.BoolFlag{Name: "headed", Usage: "show the browser window", EnvVars: []string{"CDPGUARD_HEADED"}},
		&cli.StringSliceFlag{Name: "chrome-flag", Usage: "extra browser flag, whole (repeatable; never split on commas)", EnvVars: []string{"CDPGUARD_CHROME_FLAGS"}},
		&cli.StringFlag{Name: "user-data-dir", Usage: "browser profile (default: a fresh temporary one)", EnvVars: []string{"CDPGUARD_USER_DATA_DIR"}},
	}
}

func newLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.String("log-format") {
	case "text":
		return slog.New(slog.NewTextHandler(c.App.ErrWriter, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", c.String("log-format"))
}

func config(c *cli.Context, log *slog.Logger) cdpguard.Config {
	return cdpguard.Config{
		Allow:                c.StringSlice("allow"),
		Block:                c.StringSlice("block"),
		PolicyFile:           c.String("policy-file"),
		Listen:               c.String("listen"),
		EgressListen:         c.String("egress-listen"),
		HostMap:              splitList(c.StringSlice("host-map")),
		Instructions:         c.String("instructions"),
		SearchURL:            c.String("search-url"),
		BlockedNavigation:    c.String("blocked-navigation"),
		DialogGrace:          dialogGraceFlag(c),
		PublicHosts:          splitList(c.StringSlice("public-host")),
		DownloadDir:          c.String("download-dir"),
		DownloadMaxBytes:     c.Int64("download-max-bytes"),
		UploadDir:            c.String("upload-dir"),
		AgentQueueBytes:      c.Int64("agent-queue-bytes"),
		BrowserMessageBytes:  c.Int("browser-message-bytes"),
		UserQueueBytes:       c.Int64("user-queue-bytes"),
		MaxTabsPerUser:       c.Int("max-tabs-per-user"),
		MaxContextsPerUser:   c.Int("max-contexts-per-user"),
		MaxUsers:             c.Int("max-users"),
		MaxContexts:          c.Int("max-contexts"),
		MaxTabs:              c.Int("max-tabs"),
		MaxConnsPerUser:      c.Int("max-connections-per-user"),
		SessionHeaderBytes:   c.Int("session-header-max-bytes"),
		NewUsersPerSecond:    c.Float64("new-users-per-second"),
		NewUsersBurst:        c.Int("new-users-burst"),
		SessionHeader:        c.String("session-header"),
		RequireSessionHeader: c.Bool("require-session-header"),
		SessionIdle:          sessionIdle(c.Int("session-idle")),
		AllowPrivate:         c.StringSlice("allow-private"), // split by the package
		ServiceWorkers:       c.String("service-workers"),
		DisableMCP:           !c.Bool("mcp"),
		MCPCallTimeout:       c.Duration("mcp-call-timeout"),
		MCPDialogWait:        c.Duration("mcp-dialog-wait"),
		MCPImageMaxBytes:     c.Int("mcp-image-max-bytes"),
		MCPImageMaxSide:      c.Int("mcp-image-max-side"),
		Version:              buildVersion(),
		Logger:               log,
		// The byte budget and the MCP endpoint's caps.
		MCPMaxSessions:        c.Int("mcp-max-sessions"),
		MCPMaxSessionsPerUser: c.Int("mcp-max-sessions-per-user"),
		MCPSessionIdle:        c.Duration("mcp-session-idle"),
		MCPMaxBodies:          c.Int("mcp-max-bodies"),
		MCPMaxBodiesPerUser:   c.Int("mcp-max-bodies-per-user"),
		MCPBodyTimeout:        c.Duration("mcp-body-timeout"),
		AgentTotalBytes:       c.Int64("agent-total-bytes"),
		UserReceiveBytes:      c.Int64("user-receive-bytes"),
		AgentReceiveTimeout:   c.Duration("agent-receive-timeout"),
	}
}

// sessionIdle turns --session-idle seconds into Config.SessionIdle, where 0
// would mean the default: on the command line 0 means never.
func sessionIdle(secs int) time.Duration {
	if secs <= 0 {
		return -1
	}
	return time.Duration(secs) * time.Second
}

// splitList splits entries that arrive as one environment variable.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		out = append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' || r == ' ' })...)
	}
	return out
}

// splitChromeFlags splits a list of Chrome flags given in one string (as
// CDPGUARD_CHROME_FLAGS is) at whitespace that starts a new "--" flag, so
// that values with commas and spaces stay whole.
func splitChromeFlags(in []string) []string {
	var out []string
	for _, s := range in {
		var cur []string
		for _, f := range strings.Fields(s) {
			if strings.HasPrefix(f, "--") && len(cur) > 0 {
				out = append(out, strings.Join(cur, " "))
				cur = nil
			}
			cur = append(cur, f)
		}
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
		}
	}
	return out
}

func serve(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	if err := checkPolicyFlags(c); err != nil {
		return err
	}
	cfg := config(c, log)
	cfg.ChromePath = c.String("chrome")
	cfg.Headed = c.Bool("headed")
	cfg.ChromeFlags = splitChromeFlags(c.StringSlice("chrome-flag"))
	cfg.UserDataDir = c.String("user-data-dir")
	cfg.Controls = controlsFlag(c, cfg.Headed)
	sig, stopSig := stopSignals()
	defer stopSig()
	ctx, cancel := context.WithTimeout(c.Context, 60*time.Second)
	defer cancel()
	s, err := cdpguard.Supervise(ctx, cfg, cdpguard.SupervisorOptions{})
	if err != nil {
		return err
	}
	return run(log, s, s.Err, sig)
}

func attach(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	if err := checkPolicyFlags(c); err != nil {
		return err
	}
	sig, stopSig := stopSignals()
	defer stopSig()
	ctx, cancel := context.WithTimeout(c.Context, 60*time.Second)
	defer cancel()
	cfg := config(c, log)
	cfg.Controls = controlsFlag(c, true)
	g, err := cdpguard.Attach(ctx, c.String("browser-url"), cfg)
	if err != nil {
		return err
	}
	printAttachNote(c.App.ErrWriter, g.EgressProxyURL(), c.IsSet("egress-listen"))
	return run(log, g, func() error {
		return errors.New("the browser connection was lost; every agent connection was closed")
	}, sig)
}

func check(c *cli.Context) error {
	p, err := checkPolicy(c)
	if err != nil {
		return err
	}
	if c.NArg() == 0 {
		return errors.New("check: give one or more URLs")
	}
	for _, u := range c.Args().Slice() {
		d := p.Decide(u)
		verdict := "block"
		if d.Allowed {
			verdict = "allow"
		}
		fmt.Fprintf(c.App.Writer, "%s\t%s\t%s\n", verdict, u, d.Reason)
	}
	return nil
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version + " " + bi.GoVersion
	}
	return "dev"
}

// dialogGraceFlag maps --dialog-grace onto Config.DialogGrace, where zero
// means the default: an explicit 0 on the command line means "at once".
func dialogGraceFlag(c *cli.Context) time.Duration {
	if !c.IsSet("dialog-grace") {
		return 0
	}
	if d := c.Duration("dialog-grace"); d != 0 {
		return d
	}
	return -1
}

// checkPolicy is the policy `cdpguard check` judges by: the policy file's
// group (--group, default the top level) or --allow and --block.
func checkPolicy(c *cli.Context) (*policy.Policy, error) {
	if c.String("policy-file") == "" {
		if c.String("group") != "" {
			return nil, errors.New("check: --group needs --policy-file")
		}
		return policy.Parse(c.StringSlice("allow"), c.StringSlice("block"))
	}
	if nonEmpty(c.StringSlice("allow")) || nonEmpty(c.StringSlice("block")) {
		return nil, fmt.Errorf("%w: --allow and --block (or ALLOWED_ORIGINS, BLOCKED_ORIGINS) are set", errPolicyFlags)
	}
	s, _, err := policyfile.Read(c.String("policy-file"))
	if err != nil {
		return nil, err
	}
	name := c.String("group")
	if name != "" && !slices.Contains(s.GroupNames(), name) {
		return nil, fmt.Errorf("check: the policy file has no group %q (it has: %s)", name, strings.Join(s.GroupNames(), ", "))
	}
	return s.Group(name).Policy, nil
}

// nonEmpty reports whether a list flag holds anything but blanks.
func nonEmpty(list []string) bool {
	for _, s := range list {
		if strings.TrimSpace(s) != "" {
			return true
		}
	}
	return false
}
