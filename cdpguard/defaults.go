package cdpguard

import (
	"time"

	"github.com/cdpguard/cdpguard/internal/browser"
)

// The defaults of Config, stated once: the package applies them to zero
// fields, and the command line (cmd/cdpguard) shows them as its flags'
// defaults. The command line's own listen address, 127.0.0.1:9222 (Chrome's
// usual debugging port, where clients look first), differs on purpose from
// the package's random loopback port (tests run side by side).
const (
	// DefaultSessionHeader keys a user, as in the LibreChat deployment
	// cdpguard replaces.
	DefaultSessionHeader = "X-LibreChat-User"
	// DefaultSessionIdle is how long a user's context lives without a
	// connection or activity.
	DefaultSessionIdle = 15 * time.Minute
	// DefaultDownloadMaxBytes caps each user's download directory.
	DefaultDownloadMaxBytes = 100 << 20
	// DefaultServiceWorkers refuses service-worker registration
	// (Config.ServiceWorkers): nothing runs in the background of a page.
	DefaultServiceWorkers = "block"
	// DefaultBlockedNavigation shows the explanation page, which tells the
	// agent what it can reach.
	DefaultBlockedNavigation = "page"
	// DefaultAgentQueueBytes bounds what the guard holds for one agent
	// connection (Config.AgentQueueBytes).
	DefaultAgentQueueBytes = 64 << 20
	// DefaultBrowserMessageBytes bounds one message read from the browser
	// (Config.BrowserMessageBytes).
	DefaultBrowserMessageBytes = browser.MaxMessageSize
	// minBrowserMessageBytes is the least Config.BrowserMessageBytes a
	// guard starts with.
	minBrowserMessageBytes = 1 << 20
	// DefaultUserQueueBytes bounds it for all of one user's connections
	// together (Config.UserQueueBytes).
	DefaultUserQueueBytes = 64 << 20
	// DefaultMaxTabsPerUser caps one user's open tabs.
	DefaultMaxTabsPerUser = 32
	// DefaultMaxContextsPerUser caps the browser contexts one user may
	// create besides its own.
	DefaultMaxContextsPerUser = 8
	// DefaultMaxUsers caps the users with a browser context at once, and
	// DefaultMaxContexts the browser contexts of all users together: sized
	// from Chromium's memory per context on a 24 GiB machine
	// (docs/scaling.md, "Users and browser contexts").
	DefaultMaxUsers    = 200
	DefaultMaxContexts = 400
	// DefaultMaxTabs caps the open tabs of all users together: 400 small
	// pages are about 7.9 GB of Chromium (docs/scaling.md).
	DefaultMaxTabs = 400
	// DefaultMaxConnsPerUser caps one user's agent connections.
	DefaultMaxConnsPerUser = 16
	// DefaultSessionHeaderBytes caps the session header's value (a
	// LibreChat user id is 24 bytes).
	DefaultSessionHeaderBytes = 256
	// DefaultNewUsersPerSecond and DefaultNewUsersBurst are the token
	// bucket of new users (each a browser context to create).
	DefaultNewUsersPerSecond = 10
	DefaultNewUsersBurst     = 20
)
