// Package e2e holds cdpguard's end-to-end tests: a real Chromium, real
// clients (chromedp, Playwright, Puppeteer) and real loopback hosts
// (package testhosts), with the guard in between.
//
// Run them inside a private network namespace:
//
//	unshare --net sh -c 'ip link set lo up && CDPGUARD_E2E=1 go test -race -count=1 ./e2e/...'
//
// Environment:
//   - CDPGUARD_E2E=1: a missing Chromium, node or node_modules fails the run
//     instead of skipping the browser tests.
//   - CDPGUARD_E2E_TARGET=direct: the endpoint is a plain Chromium with
//     --remote-debugging-port and no guard. Leak tests must then FAIL (each
//     vector really reaches the forbidden host) while controls pass.
//   - CDPGUARD_E2E_EGRESS=1: also run the vectors that only the egress proxy
//     closes (WebSocket, preconnect).
//   - CDPGUARD_E2E_LOG=1: guard logs and browser output go to stderr.
//   - CHROME_PATH: the browser binary; otherwise chromium, chromium-browser or
//     google-chrome on PATH.
package e2e
