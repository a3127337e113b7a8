// puppeteer23.mjs runs a short list of named checks with Puppeteer 23.3.0
// (npm alias puppeteer-core-23), the last release that numbers each
// CDPSession's command ids from 1, against one endpoint: the behaviours
// issue 33 found broken through the guard. TestPuppeteer23Core runs it
// against a plain Chromium and through the guard and compares the two.
//
// Environment: CDPGUARD_URL, ALLOWED_URL (an allowed page with #marker),
// POPUP_URL (an allowed page), FORBIDDEN_URL (unused but required by
// common.mjs), SECOND_URL (a page on a second allowed site, for an
// out-of-process iframe), HIT_URL (an allowed origin's /hit/ prefix),
// REFUSED_URL (a closed port on an allowed host), COOL_URL (a page served
// with "HTTP/1.1 200 cool!"), NO_REASON_URL (one served with "HTTP/1.1 200"),
// STEP_TIMEOUT_MS.
//
// It prints one JSON line: {"client":"puppeteer23","checks":{name:{ok,
// error,observed,ms}}}; error is the first 160 characters of the message.
import puppeteer from 'puppeteer-core-23';
import { env, withTimeout } from './common.mjs';

const T = env.stepTimeout;
const more = {
  second: process.env.SECOND_URL,
  hit: process.env.HIT_URL,
  refused: process.env.REFUSED_URL,
  cool: process.env.COOL_URL,
  noReason: process.env.NO_REASON_URL,
};
const checks = {};
let failed = false;

// check runs fn as the named check; what fn returns is its observation.
// ms, how long it took, is logged, not compared.
async function check(name, fn) {
  const started = Date.now();
  try {
    const observed = await withTimeout(Promise.resolve().then(fn), T, name);
    checks[name] = { ok: true, error: null, observed: observed ?? null };
  } catch (e) {
    failed = true;
    checks[name] = { ok: false, error: String((e && e.message) || e).slice(0, 160), observed: null };
  }
  checks[name].ms = Date.now() - started;
}

function finish(code) {
  console.log(JSON.stringify({ client: 'puppeteer23', checks }));
  process.exit(code);
}

setTimeout(() => {
  checks.watchdog = { ok: false, error: 'the checks took more than 120 s', observed: null };
  finish(3);
}, 120000).unref();

// rejection awaits p, which must reject, and returns the rejection's
// class name and message.
async function rejection(p) {
  try {
    await p;
  } catch (e) {
    return { name: e.constructor.name, message: String(e.message).slice(0, 160) };
  }
  throw new Error('resolved, want a rejection');
}

let browser;
await check('connect', async () => {
  browser = await puppeteer.connect({ browserURL: env.endpoint, protocolTimeout: T, defaultViewport: { width: 800, height: 600 } });
  return null;
});
if (!browser) finish(1);

async function newPage(ctx = browser) {
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  page.setDefaultNavigationTimeout(T);
  return page;
}

// Three CDPSessions of one connection: Puppeteer 23 numbers each one's ids
// from 1, so ids 1-4 are in flight on every session at once.
await check('sessions-same-ids-in-flight', async () => {
  const page = await newPage();
  await page.goto(env.allowed);
  const sessions = await Promise.all([0, 1, 2].map(() => page.createCDPSession()));
  const answers = await Promise.all(sessions.flatMap((s, i) => [0, 1, 2, 3].map((j) =>
    s.send('Runtime.evaluate', {
      expression: `new Promise(r => setTimeout(() => r(${i * 10 + j}), 100))`,
      awaitPromise: true, returnByValue: true,
    }).then((r) => r.result.value))));
  await Promise.all(sessions.map((s) => s.detach()));
  await page.close();
  const want = [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23];
  if (JSON.stringify(answers) !== JSON.stringify(want)) throw new Error(`answers ${JSON.stringify(answers)}`);
  return { answers };
});

// An evaluate that never settles, in flight when its page closes: Puppeteer
// rejects it with its TargetCloseError; then new pages and sessions work.
await check('in-flight-when-target-closes', async () => {
  const page = await newPage();
  await page.goto(env.allowed);
  const never = rejection(page.evaluate(() => new Promise(() => {}))); // handled from the start
  await page.evaluate(() => 1); // the never-settling command was sent first
  await page.close();
  return await never;
});
await check('new-session-after-close', async () => {
  const page = await newPage();
  await page.goto(env.allowed);
  const s = await page.createCDPSession();
  const r = await s.send('Runtime.evaluate', { expression: '6 * 7', returnByValue: true });
  const marker = await page.evaluate(() => document.getElementById('marker')?.textContent);
  await s.detach();
  await page.close();
  return { value: r.result.value, marker };
});

const page = await newPage();
await check('goto-refused-port', async () => rejection(page.goto(more.refused)));
await check('status-text-reason', async () => {
  const resp = await page.goto(more.cool);
  return { status: resp.status(), statusText: resp.statusText() };
});
await check('status-text-no-reason', async () => {
  const resp = await page.goto(more.noReason);
  return { status: resp.status(), statusText: resp.statusText() };
});
await check('goto-invalid-url', async () => rejection(page.goto('asdfasdf')));

// An iframe from a second allowed site: its own frame (out of process when
// the browser isolates sites), evaluated in. The frame is taken once it
// has committed the second site's URL and the iframe has loaded (the frame
// Puppeteer reports at frameattached is still the initial about:blank
// document), and the marker is read by the wait itself: a wait evaluates
// again in the frame's next context when one is destroyed, while a
// separate evaluate after it failed, twice in CI and only against plain
// Chromium, with "Execution context was destroyed". The marker comes back
// as a string, which Puppeteer hands over without another round trip.
// Each step names itself in an error.
await check('oopif-frame-evaluate', async () => {
  const step = (name, p) => p.catch((e) => { throw new Error(`${name}: ${(e && e.message) || e}`); });
  await step('goto', page.goto(env.allowed));
  const committed = page.waitForFrame((f) => f !== page.mainFrame() && f.url() === more.second, { timeout: T });
  await step('append the iframe', page.evaluate((u) => new Promise((resolve, reject) => {
    const f = document.createElement('iframe');
    f.onload = resolve;
    f.onerror = () => reject(new Error('the iframe did not load'));
    f.src = u;
    document.body.append(f);
  }), more.second));
  const frame = await step('wait for the frame', committed);
  const read = await step('read the marker', frame.waitForFunction(
    () => document.readyState === 'complete' && document.getElementById('marker')?.textContent));
  const marker = await step('the marker\'s value', read.jsonValue());
  return { frames: page.frames().length, marker, oopif: frame.client !== page.mainFrame().client };
});

await check('dialog-alert-accepted', async () => {
  await page.goto(env.allowed);
  const seen = new Promise((resolve) => page.once('dialog', async (d) => {
    const what = { type: d.type(), message: d.message() };
    await d.accept();
    resolve(what);
  }));
  const after = await page.evaluate(() => { alert('core check'); return 'after alert'; });
  return { dialog: await seen, after };
});

await check('interception-continue-abort', async () => {
  await page.goto(env.allowed);
  await page.setRequestInterception(true);
  const seen = [];
  const onRequest = (req) => {
    const u = new URL(req.url());
    seen.push(u.pathname);
    if (u.pathname.endsWith('/abort')) req.abort();
    else req.continue();
  };
  page.on('request', onRequest);
  try {
    const r = await page.evaluate(async (base) => {
      const ok = await fetch(base + 'go').then((x) => x.text(), (e) => 'rejected ' + e.name);
      const aborted = await fetch(base + 'abort').then((x) => 'resolved ' + x.status, (e) => 'rejected ' + e.name);
      return { ok: ok.trim(), aborted };
    }, more.hit);
    return { ...r, seen: seen.filter((p) => p.startsWith('/hit/')) };
  } finally {
    page.off('request', onRequest);
    await page.setRequestInterception(false);
  }
});

await check('wait-for-selector-delayed', async () => {
  await page.goto(env.allowed);
  await page.evaluate(() => setTimeout(() => {
    const d = document.createElement('div');
    d.id = 'late';
    d.textContent = 'late node';
    document.body.append(d);
  }, 300));
  const el = await page.waitForSelector('#late');
  return { text: await el.evaluate((e) => e.textContent) };
});

await check('browser-context-create-dispose', async () => {
  const ctx = await browser.createBrowserContext();
  const p = await newPage(ctx);
  await p.goto(env.allowed);
  const marker = await p.evaluate(() => document.getElementById('marker')?.textContent);
  const pages = (await ctx.pages()).length;
  await ctx.close();
  const listed = browser.browserContexts().includes(ctx);
  return { marker, pages, listedAfterClose: listed };
});

await page.close().catch(() => {});
await browser.disconnect();
finish(failed ? 1 : 0);
