// lifecycle.mjs is the Playwright session of TestServeLifecycle: it keeps a
// page polling a forbidden host (and an allowed sink, the control) while the
// test crashes a tab, SIGKILLs the browser and finally SIGTERMs cdpguard. It
// prints one JSON line per event on stdout and reads nothing: the test
// drives the server, this script only reacts.
//
// Environment: CDPGUARD_URL, ALLOWED_URL, POLL_FORBIDDEN, POLL_SINK, USER.
import { chromium } from 'playwright-core';

const endpoint = process.env.CDPGUARD_URL;
const headers = { 'X-LibreChat-User': process.env.USER_KEY || 'lifecycle' };
const say = (o) => console.log(JSON.stringify(o));

// session connects, opens a polling page and resolves when the connection
// is lost.
async function session(round) {
  const browser = await chromium.connectOverCDP(endpoint, { headers, timeout: 15000 });
  const lost = new Promise((resolve) => browser.on('disconnected', resolve));
  const context = browser.contexts()[0];
  const before = context.pages().length;
  const page = await context.newPage();
  await page.goto(process.env.ALLOWED_URL, { timeout: 15000 });
  await page.evaluate(([forbidden, sink]) => {
    setInterval(() => {
      fetch(forbidden, { mode: 'no-cors', cache: 'no-store' }).catch(() => {});
      fetch(sink, { mode: 'no-cors', cache: 'no-store' }).catch(() => {});
    }, 100);
  }, [process.env.POLL_FORBIDDEN, process.env.POLL_SINK]);
  say({ event: 'polling', round, pagesBefore: before });
  await lost;
  say({ event: 'disconnected', round });
}

// connectRetry retries while the endpoint answers 503 (browser restarting).
async function connectRetry(round, deadline) {
  for (;;) {
    try {
      return await session(round);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

try {
  await session(1);
  await connectRetry(2, Date.now() + 45000);
  process.exit(0);
} catch (e) {
  say({ event: 'error', error: String(e && e.stack || e) });
  process.exit(1);
}
