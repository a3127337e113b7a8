// reader.mjs measures the reader on the fixture pages with Playwright:
// for each page, goto and the whole text of Guard.read (every section, read
// on a CDP session of the page), and with READER_COMPARE=1 the size of
// Playwright's ariaSnapshot of the body and the body's innerText (the naive
// in-page variant). It also records the names of every execution context that
// Playwright's sessions were told about, so the test can check that the
// guard's isolated world is hidden. Prints one JSON line per page, then one
// summary line.
//
// Environment: CDPGUARD_URL, FIXTURE_BASE (URL prefix; a page is
// FIXTURE_BASE + name + '/'), FIXTURES (comma-separated names),
// STEP_TIMEOUT_MS, READER_WORKERS (pages read at once, default 3),
// READER_COMPARE (1: also the ariaSnapshot size and the innerText).
import { chromium } from 'playwright-core';

const endpoint = process.env.CDPGUARD_URL;
const base = process.env.FIXTURE_BASE;
const names = (process.env.FIXTURES || '').split(',').filter(Boolean);
const timeout = Number(process.env.STEP_TIMEOUT_MS || 20000);

const contexts = [];
const isolatedScripts = [];
const workers = Number(process.env.READER_WORKERS || 3);
// READER_COMPARE=1 also measures what the reader is compared with, for the
// README's table: the size of Playwright's ariaSnapshot and the body's
// innerText. Neither is scored against the truth, so the test does not
// assert them, and CI does not pay for them.
const compare = process.env.READER_COMPARE === '1';
const browser = await chromium.connectOverCDP(endpoint, { timeout });
let ok = true;

// readPage measures one fixture on page (with its CDP session).
async function readPage(page, session, name) {
  const out = { name };
  try {
    await page.goto(base + name + '/', { waitUntil: 'domcontentloaded' });
    if (compare) {
      out.snapshotChars = (await page.locator('body').ariaSnapshot()).length;
      // The naive in-page variant, for comparison: the body's innerText.
      out.innerText = await page.evaluate(() => document.body ? document.body.innerText : '');
    }
    const started = Date.now();
    let text = '';
    let offset = 0;
    for (let i = 0; i < 100; i++) {
      const r = await session.send('Guard.read', { offset, maxChars: 1000000 });
      text += r.text;
      if (r.nextOffset === undefined) {
        break;
      }
      offset = r.nextOffset;
    }
    out.readMs = Date.now() - started;
    out.text = text;
  } catch (e) {
    ok = false;
    out.error = String(e && e.stack || e);
  }
  console.log(JSON.stringify(out));
}

try {
  const queue = [...names];
  const pages = [];
  await Promise.all(Array.from({ length: workers }, async () => {
    const page = await browser.contexts()[0].newPage();
    pages.push(page);
    page.setDefaultTimeout(timeout);
    const session = await page.context().newCDPSession(page);
    session.on('Runtime.executionContextCreated', (e) => contexts.push(e.context.name));
    await session.send('Runtime.enable');
    // Every script in an isolated world that the debugger reports: the
    // guard's must not be among them.
    session.on('Debugger.scriptParsed', (e) => {
      if (e.executionContextAuxData && e.executionContextAuxData.type === 'isolated') {
        isolatedScripts.push(session.send('Debugger.getScriptSource', { scriptId: e.scriptId })
          .then((r) => r.scriptSource.slice(0, 200), () => ''));
      }
    });
    await session.send('Debugger.enable');
    await session.send('Debugger.setSkipAllPauses', { skip: true });
    for (let name = queue.shift(); name; name = queue.shift()) {
      await readPage(page, session, name);
    }
  }));
  // A session that enables Runtime after the reads is told about every
  // context that exists, the guard's world included unless it is hidden.
  const late = await pages[0].context().newCDPSession(pages[0]);
  late.on('Runtime.executionContextCreated', (e) => contexts.push(e.context.name));
  await late.send('Runtime.enable');
  await late.send('Runtime.evaluate', { expression: '1' });
} catch (e) {
  ok = false;
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
}
const scripts = await Promise.all(isolatedScripts);
await browser.close().catch(() => {});
console.log(JSON.stringify({ summary: true, ok, contexts, isolatedScripts: scripts }));
process.exit(ok ? 0 : 1);
