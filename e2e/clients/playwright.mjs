// playwright.mjs drives the endpoint with Playwright's connectOverCDP, as an
// agent would: open an allowed page, evaluate, screenshot, a popup, a blocked
// navigation (reading the explanation page), then disconnect.
import { chromium } from 'playwright-core';
import { env, Steps, isPNG, checkExplanation, watchdog } from './common.mjs';

const steps = new Steps('playwright');
watchdog(90000, steps);
const T = env.stepTimeout;

const browser = await steps.run('connect', () => chromium.connectOverCDP(env.endpoint, { timeout: T }));
if (!browser) steps.finish();

const page = await steps.run('newPage', async () => {
  const context = browser.contexts()[0] ?? (await browser.newContext());
  return context.newPage();
});
if (!page) steps.finish();
page.setDefaultTimeout(T);
page.setDefaultNavigationTimeout(T);

await steps.run('gotoAllowed', async () => {
  const resp = await page.goto(env.allowed, { timeout: T });
  if (!resp || resp.status() !== 200) throw new Error(`status ${resp && resp.status()}`);
  return { status: resp.status() };
});

await steps.run('evaluate', async () => {
  const v = await page.evaluate(() => [1 + 2, document.getElementById('marker')?.textContent]);
  if (v[0] !== 3 || v[1] !== 'allowed-page-marker') throw new Error(`got ${JSON.stringify(v)}`);
  return v;
});

await steps.run('screenshot', async () => {
  const buf = await page.screenshot({ timeout: T });
  if (!isPNG(buf)) throw new Error('screenshot is not a PNG');
  return { bytes: buf.length };
});

await steps.run('popup', async () => {
  const [popup] = await Promise.all([
    page.waitForEvent('popup', { timeout: T }),
    page.evaluate((u) => { window.open(u); }, env.popup),
  ]);
  await popup.waitForLoadState('load', { timeout: T });
  const marker = await popup.evaluate(() => document.getElementById('marker')?.textContent);
  if (marker !== 'popup-page-marker') throw new Error(`popup marker ${JSON.stringify(marker)} at ${popup.url()}`);
  const url = popup.url();
  await popup.close();
  return { url };
});

await steps.run('explanationPage', async () => {
  let status = null;
  try {
    const resp = await page.goto(env.forbidden, { timeout: T });
    status = resp && resp.status();
  } catch (e) {
    throw new Error(`goto forbidden threw (expected a 403 explanation page): ${e.message}`);
  }
  const text = await page.evaluate(() => document.body ? document.body.innerText : '');
  return { status, ...checkExplanation(text) };
});

await steps.run('close', async () => {
  await page.close();
  await browser.close();
});

steps.finish();
