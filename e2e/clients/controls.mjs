// controls.mjs opens a page through cdpguard with Playwright as the user
// named by CDPGUARD_USER and prints one JSON line: the ariaSnapshot of the
// whole document, once the guard's controls had time to draw. It leaves
// the tab open (the test checks, as the human, that the badge is there).
//
// Environment: CDPGUARD_URL, CDPGUARD_USER, PAGE_URL.
import { chromium } from 'playwright-core';

const browser = await chromium.connectOverCDP(process.env.CDPGUARD_URL, {
  headers: { 'X-LibreChat-User': process.env.CDPGUARD_USER },
  timeout: 20000,
});
const out = {};
try {
  const page = await browser.contexts()[0].newPage();
  await page.goto(process.env.PAGE_URL);
  await page.waitForTimeout(800);
  out.aria = await page.locator('html').ariaSnapshot();
} catch (e) {
  out.error = String(e && e.stack || e);
}
console.log(JSON.stringify(out));
process.exit(0);
