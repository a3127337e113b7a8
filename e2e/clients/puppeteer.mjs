// puppeteer.mjs is playwright.mjs for Puppeteer's connect({browserURL}).
import puppeteer from 'puppeteer-core';
import { env, Steps, isPNG, checkExplanation, watchdog, withTimeout } from './common.mjs';

const steps = new Steps('puppeteer');
watchdog(90000, steps);
const T = env.stepTimeout;

const browser = await steps.run('connect', () =>
  puppeteer.connect({ browserURL: env.endpoint, protocolTimeout: T, defaultViewport: { width: 800, height: 600 } }));
if (!browser) steps.finish();

const page = await steps.run('newPage', () => browser.newPage());
if (!page) steps.finish();
page.setDefaultTimeout(T);
page.setDefaultNavigationTimeout(T);

await steps.run('gotoAllowed', async () => {
  const resp = await page.goto(env.allowed, { timeout: T, waitUntil: 'load' });
  if (!resp || resp.status() !== 200) throw new Error(`status ${resp && resp.status()}`);
  return { status: resp.status() };
});

await steps.run('evaluate', async () => {
  const v = await page.evaluate(() => [1 + 2, document.getElementById('marker')?.textContent]);
  if (v[0] !== 3 || v[1] !== 'allowed-page-marker') throw new Error(`got ${JSON.stringify(v)}`);
  return v;
});

await steps.run('screenshot', async () => {
  const buf = await page.screenshot({ type: 'png' });
  if (!isPNG(buf)) throw new Error('screenshot is not a PNG');
  return { bytes: buf.length };
});

await steps.run('popup', async () => {
  const popupP = new Promise((resolve) => page.once('popup', resolve));
  await page.evaluate((u) => { window.open(u); }, env.popup);
  const popup = await withTimeout(popupP, T, 'popup event');
  if (!popup) throw new Error('popup event without a page');
  await popup.waitForFunction(() => document.getElementById('marker') && document.readyState === 'complete', { timeout: T });
  const marker = await popup.evaluate(() => document.getElementById('marker')?.textContent);
  if (marker !== 'popup-page-marker') throw new Error(`popup marker ${JSON.stringify(marker)} at ${popup.url()}`);
  const url = popup.url();
  await popup.close();
  return { url };
});

await steps.run('explanationPage', async () => {
  let status = null;
  try {
    const resp = await page.goto(env.forbidden, { timeout: T, waitUntil: 'load' });
    status = resp && resp.status();
  } catch (e) {
    throw new Error(`goto forbidden threw (expected a 403 explanation page): ${e.message}`);
  }
  const text = await page.evaluate(() => document.body ? document.body.innerText : '');
  return { status, ...checkExplanation(text) };
});

await steps.run('close', async () => {
  await page.close();
  await browser.disconnect();
});

steps.finish();
