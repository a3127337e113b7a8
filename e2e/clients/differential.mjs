// differential.mjs runs one list of client scenarios with Playwright and
// Puppeteer against one endpoint and prints what each client observed, as
// one JSON line: {observations: {"<client>/<scenario>": {...}}}. The Go test
// (e2e/differential_test.go) runs it against a directly driven Chromium and
// through cdpguard and compares the two.
//
// Environment (besides common.mjs's): DIFF_BASE (an allowed origin serving
// the differential pages), DIFF_BLOCKED (the same server under a name the
// guard refuses), DIFF_GRACE_MS (the guard's --dialog-grace), DIFF_TMP (a
// directory for downloads), DIFF_CLIENTS (comma list, default all three),
// DIFF_ONLY (comma list of scenarios, default all), MCP_CLI (path of
// @playwright/mcp's cli.js, for the mcp client).
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, withTimeout } from './common.mjs';

const base = process.env.DIFF_BASE;
const blocked = process.env.DIFF_BLOCKED;
const grace = Number(process.env.DIFF_GRACE_MS || 1000);
const tmp = process.env.DIFF_TMP || '/tmp';
const clients = (process.env.DIFF_CLIENTS || 'playwright,puppeteer,mcp').split(',');
const only = (process.env.DIFF_ONLY || '').split(',').filter(Boolean);
const T = env.stepTimeout;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// norm keeps what a client observed comparable between runs: origins and
// ids that differ per run become placeholders, errors keep their first line.
function norm(v) {
  if (v instanceof Error) v = { error: v.message };
  return JSON.parse(JSON.stringify(v ?? null, (k, x) => {
    if (typeof x !== 'string') return x;
    x = x.split(base).join('BASE').split(blocked).join('BLOCKED');
    if (k === 'error') x = x.split('\n')[0].replace(/ [0-9a-f]{32}/gi, ' ID').replace(/Call log:.*/, '').trim();
    // Without a network (the tests' namespace) Chrome says the first,
    // with one the second: both mean "no such name" here.
    if (k === 'error') x = x.replace(/net::ERR_(INTERNET_DISCONNECTED|NAME_NOT_RESOLVED)/, 'net::ERR_NAME_NOT_RESOLVED');
    return x;
  }));
}

// errorOf returns the message of p's rejection, or null.
async function errorOf(p) {
  try {
    await p;
    return null;
  } catch (e) {
    return e.message.split('\n')[0];
  }
}

// pngSize reads width and height from a PNG header.
function pngSize(buf) {
  const sig = buf.subarray(0, 8).toString('hex') === '89504e470d0a1a0a';
  return { png: sig, width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

// --- Playwright ---------------------------------------------------------
const playwright = {
  async connect() {
    this.browser = await chromium.connectOverCDP(env.endpoint, { timeout: T });
    this.context = this.browser.contexts()[0];
  },
  async page() {
    const p = await this.context.newPage();
    p.setDefaultTimeout(T);
    return p;
  },
  async close() { await this.browser.close(); },
  scenarios: {
    async version(c) {
      const s = await c.browser.newBrowserCDPSession();
      const v = await s.send('Browser.getVersion');
      await s.detach();
      return { product: v.product, protocolVersion: v.protocolVersion, version: c.browser.version() };
    },
    async 'dialog-accept'(c, p) {
      let seen;
      p.once('dialog', (d) => { seen = { type: d.type(), message: d.message() }; d.accept(); });
      const result = await p.evaluate(() => confirm('sure?'));
      return { seen, result };
    },
    async 'dialog-dismiss'(c, p) {
      p.once('dialog', (d) => d.dismiss());
      return { result: await p.evaluate(() => confirm('sure?')) };
    },
    async 'dialog-prompt'(c, p) {
      let def;
      p.once('dialog', (d) => { def = d.defaultValue(); d.accept('typed text'); });
      return { def, result: await p.evaluate(() => prompt('name?', 'default')) };
    },
    async 'dialog-auto-dismiss'(c, p) {
      return { result: await p.evaluate(() => confirm('nobody handles this')) };
    },
    async 'dialog-delayed-accept'(c, p) {
      p.once('dialog', async (d) => { await sleep(Math.min(200, grace / 5)); await d.accept(); });
      return { result: await p.evaluate(() => confirm('after a while?')) };
    },
    async 'dialog-late-accept'(c, p) {
      let acceptError = 'pending';
      const handled = new Promise((resolve) => {
        p.once('dialog', async (d) => {
          await sleep(grace + 700);
          acceptError = await errorOf(d.accept());
          resolve();
        });
      });
      const result = await p.evaluate(() => confirm('too late?'));
      await withTimeout(handled, grace + 5000, 'late accept');
      return { result, acceptError };
    },
    async 'dialog-loop'(c, p) {
      let n = 0;
      p.on('dialog', (d) => { n++; d.accept(); });
      const result = await p.evaluate(() => { for (let i = 0; i < 3; i++) alert('loop ' + i); return 'done'; });
      return { result, dialogs: n };
    },
    async 'dialog-beforeunload'(c, p) {
      const types = [];
      p.on('dialog', (d) => { types.push(d.type()); d.accept(); });
      await p.goto(base + '/beforeunload');
      await p.click('#touch');
      await p.goto(base + '/page');
      return { types, marker: await p.textContent('#marker') };
    },
    async download(c, p) {
      await p.goto(base + '/dlpage');
      const [d] = await Promise.all([p.waitForEvent('download'), p.click('#dl')]);
      const failure = await d.failure();
      const path = failure ? null : await d.path().catch((e) => e);
      return {
        suggested: d.suggestedFilename(),
        failure,
        pathError: path instanceof Error ? path.message.split('\n')[0] : null,
        content: typeof path === 'string' && existsSync(path) ? readFileSync(path, 'utf8') : null,
        // Playwright names the file itself, in the temp dir it made
        // (README, downloads): true with a guard too, where Chrome wrote elsewhere.
        inPlaywrightDir: typeof path === 'string' ? basename(dirname(path)).startsWith('playwright-artifacts-') : null,
      };
    },
    async 'nav-blocked-host'(c, p) {
      const r = await p.goto(blocked + '/page').catch((e) => e);
      return r instanceof Error ? { error: r.message } : { status: r.status() };
    },
    async 'nav-refused-scheme'(c, p) {
      return { error: await errorOf(p.goto('file:///etc/hostname')) };
    },
    async 'nav-route-abort'(c, p) {
      await p.route('**/aborted', (r) => r.abort('blockedbyclient'));
      return { error: await errorOf(p.goto(base + '/aborted')) };
    },
    async 'nav-unresolvable'(c, p) {
      const r = await p.goto('http://nxdomain.invalid/').catch((e) => e);
      return r instanceof Error ? { error: r.message } : { status: r.status(), text: (await p.textContent('body')).slice(0, 200) };
    },
    async popup(c, p) {
      await p.goto(base + '/page');
      const [pop] = await Promise.all([p.waitForEvent('popup'), p.evaluate((u) => { window.open(u); }, base + '/popup')]);
      await pop.waitForLoadState('load');
      const r = { url: pop.url(), marker: await pop.textContent('#marker') };
      await pop.close();
      return r;
    },
    async 'discover-targets'(c, p) {
      const s = await c.browser.newBrowserCDPSession();
      const seen = [];
      s.on('Target.targetCreated', (e) => seen.push(e.targetInfo));
      s.on('Target.targetInfoChanged', (e) => seen.push(e.targetInfo));
      await s.send('Target.setDiscoverTargets', { discover: true });
      await p.goto(base + '/page?discover');
      const deadline = Date.now() + T;
      while (!seen.some((t) => t.url.endsWith('/page?discover')) && Date.now() < deadline) await sleep(50);
      await s.detach();
      return { sawOwnPage: seen.some((t) => t.type === 'page' && t.url.endsWith('/page?discover')) };
    },
    async 'cookies-storage'(c, p) {
      await p.goto(base + '/page');
      await c.context.addCookies([{ name: 'added', value: 'by-client', url: base }]);
      const inPage = await p.evaluate(() => {
        document.cookie = 'script=set';
        localStorage.setItem('k', 'v');
        return { cookie: document.cookie.split('; ').sort(), local: localStorage.getItem('k') };
      });
      const cookies = (await c.context.cookies(base)).map((x) => `${x.name}=${x.value}`).sort();
      await c.context.clearCookies();
      return { inPage, cookies, after: (await c.context.cookies(base)).length };
    },
    async screenshot(c, p) {
      await p.setViewportSize({ width: 640, height: 480 });
      await p.goto(base + '/page');
      return pngSize(await p.screenshot());
    },
    async pdf(c, p) {
      await p.goto(base + '/page');
      const buf = await p.pdf();
      return { pdf: buf.subarray(0, 5).toString() === '%PDF-' };
    },
  },
};

// --- Puppeteer ----------------------------------------------------------
const pptr = {
  async connect() {
    this.browser = await puppeteer.connect({ browserURL: env.endpoint, protocolTimeout: T });
  },
  async page() {
    const p = await this.browser.newPage();
    p.setDefaultTimeout(T);
    return p;
  },
  async close() { await this.browser.disconnect(); },
  scenarios: {
    async version(c) {
      const s = await c.browser.target().createCDPSession();
      const v = await s.send('Browser.getVersion');
      await s.detach();
      return { product: v.product, protocolVersion: v.protocolVersion, version: await c.browser.version() };
    },
    async 'dialog-accept'(c, p) {
      let seen;
      p.once('dialog', (d) => { seen = { type: d.type(), message: d.message() }; d.accept(); });
      return { seen, result: await p.evaluate(() => confirm('sure?')) };
    },
    async 'dialog-dismiss'(c, p) {
      p.once('dialog', (d) => d.dismiss());
      return { result: await p.evaluate(() => confirm('sure?')) };
    },
    async 'dialog-prompt'(c, p) {
      let def;
      p.once('dialog', (d) => { def = d.defaultValue(); d.accept('typed text'); });
      return { def, result: await p.evaluate(() => prompt('name?', 'default')) };
    },
    async 'dialog-late-accept'(c, p) {
      let acceptError = 'pending';
      const handled = new Promise((resolve) => {
        p.once('dialog', async (d) => {
          await sleep(grace + 700);
          acceptError = await errorOf(d.accept());
          resolve();
        });
      });
      const result = await withTimeout(p.evaluate(() => confirm('too late?')), grace + 5000, 'confirm');
      await withTimeout(handled, grace + 5000, 'late accept');
      return { result, acceptError };
    },
    async 'dialog-loop'(c, p) {
      let n = 0;
      p.on('dialog', (d) => { n++; d.accept(); });
      const result = await p.evaluate(() => { for (let i = 0; i < 3; i++) alert('loop ' + i); return 'done'; });
      return { result, dialogs: n };
    },
    async 'dialog-beforeunload'(c, p) {
      const types = [];
      p.on('dialog', (d) => { types.push(d.type()); d.accept(); });
      await p.goto(base + '/beforeunload');
      await p.click('#touch');
      await p.goto(base + '/page');
      return { types, marker: await p.$eval('#marker', (e) => e.textContent) };
    },
    async download(c, p) {
      const s = await c.browser.target().createCDPSession();
      const states = [];
      let begun = null;
      const done = new Promise((resolve) => {
        s.on('Browser.downloadWillBegin', (e) => { begun = { suggested: e.suggestedFilename }; });
        s.on('Browser.downloadProgress', (e) => {
          if (e.state !== 'inProgress') { states.push(e.state); resolve(); }
        });
      });
      await s.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: tmp + '/puppeteer', eventsEnabled: true });
      await p.goto(base + '/dlpage');
      await p.click('#dl');
      await withTimeout(done, T, 'download end');
      await s.detach();
      return { begun, states };
    },
    async 'nav-blocked-host'(c, p) {
      const r = await p.goto(blocked + '/page').catch((e) => e);
      return r instanceof Error ? { error: r.message } : { status: r.status() };
    },
    async 'nav-refused-scheme'(c, p) {
      return { error: await errorOf(p.goto('file:///etc/hostname')) };
    },
    async 'nav-request-abort'(c, p) {
      await p.setRequestInterception(true);
      p.on('request', (r) => (r.url().endsWith('/aborted') ? r.abort('blockedbyclient') : r.continue()));
      return { error: await errorOf(p.goto(base + '/aborted')) };
    },
    async 'nav-unresolvable'(c, p) {
      const r = await p.goto('http://nxdomain.invalid/').catch((e) => e);
      return r instanceof Error ? { error: r.message } : { status: r.status(), text: (await p.$eval('body', (e) => e.textContent)).slice(0, 200) };
    },
    async popup(c, p) {
      await p.goto(base + '/page');
      const [pop] = await Promise.all([
        new Promise((r) => p.once('popup', r)),
        p.evaluate((u) => { window.open(u); }, base + '/popup'),
      ]);
      await pop.waitForFunction(() => document.readyState === 'complete');
      const r = { url: pop.url(), marker: await pop.$eval('#marker', (e) => e.textContent) };
      await pop.close();
      return r;
    },
    async 'discover-targets'(c, p) {
      // Puppeteer keeps its target list with Target.setDiscoverTargets on
      // its browser-level session.
      await p.goto(base + '/page?discover');
      const t = await c.browser.waitForTarget((x) => x.url().endsWith('/page?discover'), { timeout: T });
      return { type: t.type(), browserTarget: c.browser.targets().filter((x) => x.type() === 'browser').length };
    },
    async 'cookies-storage'(c, p) {
      await p.goto(base + '/page');
      await p.setCookie({ name: 'added', value: 'by-client', url: base });
      const inPage = await p.evaluate(() => {
        document.cookie = 'script=set';
        localStorage.setItem('k', 'v');
        return { cookie: document.cookie.split('; ').sort(), local: localStorage.getItem('k') };
      });
      const cookies = (await p.cookies(base)).map((x) => `${x.name}=${x.value}`).sort();
      await p.deleteCookie(...(await p.cookies(base)));
      return { inPage, cookies, after: (await p.cookies(base)).length };
    },
    async screenshot(c, p) {
      await p.setViewport({ width: 640, height: 480 });
      await p.goto(base + '/page');
      return pngSize(Buffer.from(await p.screenshot()));
    },
    async pdf(c, p) {
      await p.goto(base + '/page');
      const buf = Buffer.from(await p.pdf());
      return { pdf: buf.subarray(0, 5).toString() === '%PDF-' };
    },
  },
};

// --- @playwright/mcp ---------------------------------------------------
// An agent answers a dialog with browser_handle_dialog, some time after the
// tool call that made the page open it.
const mcp = {
  async connect() {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [process.env.MCP_CLI, '--cdp-endpoint', env.endpoint, '--output-dir', tmp + '/mcp', '--cdp-timeout', String(T)],
      cwd: tmp,
      stderr: 'ignore',
    });
    this.client = new Client({ name: 'cdpguard-differential', version: '1.0.0' });
    await this.client.connect(transport);
  },
  async page() { return null; },
  async close() { await this.client.close(); },
  async call(name, args) {
    const res = await this.client.callTool({ name, arguments: args }, undefined, { timeout: T });
    const text = (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    if (res.isError) return { error: text.split('\n').find((l) => l.trim() && !l.startsWith('#')) || text };
    const m = text.match(/### Result\n+([^\n]*)/);
    return { result: m ? m[1] : null };
  },
  async dialog(c, wait) {
    await c.call('browser_navigate', { url: base + '/page' });
    await c.call('browser_evaluate', { function: '() => { setTimeout(() => { window.answer = confirm("sure?"); }, 50); return 1; }' });
    await sleep(wait);
    const handled = await c.call('browser_handle_dialog', { accept: true });
    const page = await c.call('browser_evaluate', { function: '() => String(window.answer)' });
    return { handled: handled.error ? { error: handled.error } : 'ok', pageSaw: page.result };
  },
  scenarios: {
    async 'dialog-accept'(c) { return c.dialog(c, 300); },
    async 'dialog-late-accept'(c) { return c.dialog(c, grace + 700); },
  },
};

const observations = {};
const all = { playwright, puppeteer: pptr, mcp };
for (const name of clients) {
  const c = all[name];
  if (only.length && !Object.keys(c.scenarios).some((s) => only.includes(s))) continue;
  try {
    await withTimeout(c.connect(), T, `${name} connect`);
  } catch (e) {
    observations[`${name}/connect`] = norm(e);
    continue;
  }
  for (const [scenario, fn] of Object.entries(c.scenarios)) {
    if (only.length && !only.includes(scenario)) continue;
    let p;
    const started = Date.now();
    try {
      p = await withTimeout(c.page(), T, 'new page');
      observations[`${name}/${scenario}`] = norm(await withTimeout(fn(c, p), T, scenario));
    } catch (e) {
      observations[`${name}/${scenario}`] = norm(e);
    }
    if (p) await withTimeout(p.close(), T, 'close page').catch(() => {});
    process.stderr.write(`${name}/${scenario}: ${Date.now() - started} ms\n`);
  }
  await withTimeout(c.close(), T, `${name} close`).catch(() => {});
}
console.log(JSON.stringify({ observations }));
process.exit(0);
