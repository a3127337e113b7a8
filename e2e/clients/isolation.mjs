// isolation.mjs checks per-user isolation with two real clients of two users
// connected at once. Usage: node clients/isolation.mjs playwright|puppeteer
//
// Besides common.mjs's environment: USER_A and USER_B (the two users' header
// values), SESSION_HEADER (default X-LibreChat-User). Every step prints into
// one JSON result line; a failed step does not stop the later ones.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { env, Steps, watchdog, withTimeout } from './common.mjs';

const mode = process.argv[2];
const header = process.env.SESSION_HEADER || 'X-LibreChat-User';
const userA = process.env.USER_A || 'alice';
const userB = process.env.USER_B || 'bob';
const T = env.stepTimeout;
const steps = new Steps(`isolation-${mode}`);
watchdog(150000, steps);

// urlFor gives each user's page its own query, so a URL names its owner.
const urlFor = (who) => `${env.allowed}?user=${encodeURIComponent(who)}`;

// refused asserts that p rejects with the guard's refusal.
async function refused(p, what) {
  try {
    const r = await p;
    throw new Error(`${what} succeeded: ${JSON.stringify(r)}`);
  } catch (e) {
    const msg = String(e && e.message || e);
    if (!msg.includes('cdpguard')) throw new Error(`${what} failed, but not by the guard: ${msg}`);
    return msg.slice(0, 200);
  }
}

// markPage sets localStorage and a cookie that name the user, and reports
// what the page saw before setting them (another user's values must be absent).
const markScript = (who) => {
  const before = { storage: localStorage.getItem('who'), cookie: document.cookie };
  localStorage.setItem('who', who);
  document.cookie = `who=${who}; path=/`;
  return { before, marker: document.getElementById('marker')?.textContent };
};

function checkMark(got, who) {
  if (got.marker !== 'allowed-page-marker') throw new Error(`page marker ${JSON.stringify(got.marker)}`);
  if (got.before.storage !== null) throw new Error(`${who} saw localStorage who=${got.before.storage}`);
  if (got.before.cookie.includes('who=')) throw new Error(`${who} saw cookie ${got.before.cookie}`);
  return got;
}

function noURL(urls, who, what) {
  const bad = urls.filter((u) => u.includes(`user=${encodeURIComponent(who)}`));
  if (bad.length) throw new Error(`${what} shows ${who}'s pages: ${JSON.stringify(bad)}`);
}

function hasURL(urls, who, what) {
  if (!urls.some((u) => u.includes(`user=${encodeURIComponent(who)}`))) {
    throw new Error(`${what} lacks ${who}'s page: ${JSON.stringify(urls)}`);
  }
}

async function playwrightFlow() {
  const connect = (who) => chromium.connectOverCDP(env.endpoint, { timeout: T, headers: { [header]: who } });
  let a, b;
  await steps.run('connect', async () => {
    [a, b] = await Promise.all([connect(userA), connect(userB)]);
  });
  if (!a || !b) return;
  const ctxA = a.contexts()[0];
  const ctxB = b.contexts()[0];
  let pageA, pageB, cdpA, cdpB, targetA, ctxA2Id;

  await steps.run('defaultContext', () => {
    if (!ctxA || !ctxB) throw new Error(`contexts: a=${a.contexts().length} b=${b.contexts().length}`);
    if (a.contexts().length !== 1 || b.contexts().length !== 1) {
      throw new Error(`each user should see exactly one context: a=${a.contexts().length} b=${b.contexts().length}`);
    }
    return { a: ctxA.pages().length, b: ctxB.pages().length };
  });

  await steps.run('userAStorage', async () => {
    pageA = await ctxA.newPage();
    pageA.setDefaultTimeout(T);
    await pageA.goto(urlFor(userA));
    return checkMark(await pageA.evaluate(markScript, userA), userA);
  });

  await steps.run('userBStorage', async () => {
    pageB = await ctxB.newPage();
    pageB.setDefaultTimeout(T);
    await pageB.goto(urlFor(userB));
    return checkMark(await pageB.evaluate(markScript, userB), userB);
  });

  await steps.run('pagesHidden', async () => {
    // Give target events time to arrive: a leak would show up as a page.
    await new Promise((r) => setTimeout(r, 300));
    const urlsA = a.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    const urlsB = b.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    hasURL(urlsA, userA, 'user A pages');
    hasURL(urlsB, userB, 'user B pages');
    noURL(urlsA, userB, 'user A pages');
    noURL(urlsB, userA, 'user B pages');
    return { a: urlsA, b: urlsB };
  });

  await steps.run('cookiesHidden', async () => {
    const ca = (await ctxA.cookies()).map((c) => `${c.name}=${c.value}`);
    const cb = (await ctxB.cookies()).map((c) => `${c.name}=${c.value}`);
    if (!ca.includes(`who=${userA}`)) throw new Error(`A's cookies lack its own: ${ca}`);
    if (!cb.includes(`who=${userB}`)) throw new Error(`B's cookies lack its own: ${cb}`);
    if (ca.includes(`who=${userB}`) || cb.includes(`who=${userA}`)) throw new Error(`cookies leak: A=${ca} B=${cb}`);
    return { a: ca, b: cb };
  });

  await steps.run('getTargetsFiltered', async () => {
    cdpA = await a.newBrowserCDPSession();
    cdpB = await b.newBrowserCDPSession();
    const ta = (await cdpA.send('Target.getTargets')).targetInfos;
    const tb = (await cdpB.send('Target.getTargets')).targetInfos;
    noURL(tb.map((t) => t.url), userA, 'B Target.getTargets');
    noURL(ta.map((t) => t.url), userB, 'A Target.getTargets');
    targetA = ta.find((t) => t.url.includes(`user=${encodeURIComponent(userA)}`));
    if (!targetA) throw new Error(`A's own page missing from A's Target.getTargets: ${JSON.stringify(ta.map((t) => t.url))}`);
    return { a: ta.length, b: tb.length };
  });

  await steps.run('crossAttachRefused', async () => {
    if (!targetA) throw new Error('no target of A known');
    return refused(cdpB.send('Target.attachToTarget', { targetId: targetA.targetId, flatten: true }), 'B attaching to A\'s page');
  });

  await steps.run('crossCloseRefused', async () => {
    if (!targetA) throw new Error('no target of A known');
    const msg = await refused(cdpB.send('Target.closeTarget', { targetId: targetA.targetId }), 'B closing A\'s page');
    await refused(cdpB.send('Target.activateTarget', { targetId: targetA.targetId }), 'B activating A\'s page');
    await refused(cdpB.send('Target.getTargetInfo', { targetId: targetA.targetId }), 'B reading A\'s target info');
    // A's page must still be alive and A's connection usable.
    const marker = await pageA.evaluate(() => document.getElementById('marker')?.textContent);
    if (marker !== 'allowed-page-marker') throw new Error(`A's page after B's attempts: ${marker}`);
    return msg;
  });

  await steps.run('concurrentPages', async () => {
    // Both users open tabs at the same moment: every auto-attach of each
    // connection sees the other's new tabs, which must be released, not
    // held (a hang) and not adopted (a leak).
    const open = (ctx, who, i) => ctx.newPage().then(async (p) => {
      await p.goto(urlFor(`${who}-c${i}`), { timeout: T });
      return p;
    });
    const [pa, pb] = await Promise.all([
      Promise.all([0, 1, 2].map((i) => open(ctxA, userA, i))),
      Promise.all([0, 1, 2].map((i) => open(ctxB, userB, i))),
    ]);
    await new Promise((r) => setTimeout(r, 300));
    const urlsA = a.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    const urlsB = b.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    for (const i of [0, 1, 2]) {
      hasURL(urlsA, `${userA}-c${i}`, 'A pages');
      hasURL(urlsB, `${userB}-c${i}`, 'B pages');
      noURL(urlsA, `${userB}-c${i}`, 'A pages');
      noURL(urlsB, `${userA}-c${i}`, 'B pages');
    }
    await Promise.all([...pa, ...pb].map((p) => p.close()));
    return { a: urlsA.length, b: urlsB.length };
  });

  await steps.run('tracingNoLeak', async () => {
    // Tracing records every process of the browser; B must not learn A's
    // pages that way, neither from the browser session nor from a page's.
    const leaked = (buf, tag) => buf.includes(`user=${encodeURIComponent(`${userA}-${tag}`)}`);
    const visitA = async (tag) => {
      const p = await ctxA.newPage();
      await p.goto(urlFor(`${userA}-${tag}`), { timeout: T });
      await p.close();
    };
    const out = {};
    try {
      await b.startTracing(undefined, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline'] });
      await visitA('traced');
      const buf = (await b.stopTracing()).toString('utf8');
      if (leaked(buf, 'traced')) throw new Error(`B's browser-wide trace (${buf.length} bytes) records A's page`);
      out.browser = { traceBytes: buf.length };
    } catch (e) {
      if (!String(e.message).includes('cdpguard')) throw e;
      out.browser = { refused: String(e.message).slice(0, 160) };
    }
    // The same from a session on one of B's own pages.
    const pb = await ctxB.newPage();
    const s = await ctxB.newCDPSession(pb);
    const chunks = [];
    s.on('Tracing.dataCollected', (e) => chunks.push(JSON.stringify(e.value)));
    const complete = new Promise((r) => s.once('Tracing.tracingComplete', r));
    try {
      await s.send('Tracing.start', { traceConfig: { includedCategories: ['devtools.timeline', 'disabled-by-default-devtools.timeline'] }, transferMode: 'ReportEvents' });
      await visitA('page-traced');
      await s.send('Tracing.end');
      await withTimeout(complete, T, 'Tracing.tracingComplete');
      const buf = chunks.join('\n');
      if (leaked(buf, 'page-traced')) throw new Error(`B's page-level trace (${buf.length} bytes) records A's page`);
      out.page = { traceBytes: buf.length };
    } catch (e) {
      if (!String(e.message).includes('cdpguard')) throw e;
      out.page = { refused: String(e.message).slice(0, 160) };
    }
    await s.detach().catch(() => {});
    await pb.close();
    return out;
  });

  await steps.run('newContextOwned', async () => {
    const ctxA2 = await a.newContext();
    const p = await ctxA2.newPage();
    await p.goto(urlFor(`${userA}-ctx2`), { timeout: T });
    const ctxsA = (await cdpA.send('Target.getBrowserContexts')).browserContextIds;
    const ctxsB = (await cdpB.send('Target.getBrowserContexts')).browserContextIds;
    if (ctxsA.length !== 1) throw new Error(`A should see its one created context: ${ctxsA}`);
    ctxA2Id = ctxsA[0];
    if (ctxsB.includes(ctxA2Id)) throw new Error(`B sees A's context ${ctxA2Id}`);
    if (b.contexts().length !== 1) throw new Error(`B has ${b.contexts().length} contexts`);
    const tb = (await cdpB.send('Target.getTargets')).targetInfos;
    noURL(tb.map((t) => t.url), `${userA}-ctx2`, 'B Target.getTargets');
    const urlsB = b.contexts().flatMap((c) => c.pages()).map((x) => x.url());
    noURL(urlsB, `${userA}-ctx2`, 'B pages');
    // A's new context has its own storage, not A's default one.
    const seen = await p.evaluate(() => localStorage.getItem('who'));
    if (seen !== null) throw new Error(`A's new context sees localStorage ${seen}`);
    return { ctxsA, ctxsB };
  });

  await steps.run('crossContextRefused', async () => {
    if (!ctxA2Id) throw new Error('no context of A known');
    const r1 = await refused(cdpB.send('Target.disposeBrowserContext', { browserContextId: ctxA2Id }), 'B disposing A\'s context');
    await refused(cdpB.send('Target.createTarget', { url: 'about:blank', browserContextId: ctxA2Id }), 'B opening a tab in A\'s context');
    await refused(cdpB.send('Storage.getCookies', { browserContextId: ctxA2Id }), 'B reading cookies of A\'s context');
    const own = (await cdpB.send('Storage.getCookies')).cookies.map((c) => `${c.name}=${c.value}`);
    if (own.includes(`who=${userA}`)) throw new Error(`B's Storage.getCookies shows A's cookie: ${own}`);
    return r1;
  });

  await steps.run('closeLeavesOther', async () => {
    await b.close();
    const marker = await pageA.evaluate(() => document.getElementById('marker')?.textContent);
    if (marker !== 'allowed-page-marker') throw new Error(`A's page after B closed: ${marker}`);
    const p = await ctxA.newPage();
    const resp = await p.goto(urlFor(`${userA}-after`), { timeout: T });
    if (!resp || resp.status() !== 200) throw new Error(`A's new page after B closed: ${resp && resp.status()}`);
    await p.close();
    return { status: resp.status() };
  });

  await steps.run('reconnectSeesOwn', async () => {
    await a.close();
    a = await connect(userA);
    const urls = a.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    hasURL(urls, userA, 'A after reconnecting');
    noURL(urls, userB, 'A after reconnecting');
    b = await connect(userB);
    const urlsB = b.contexts().flatMap((c) => c.pages()).map((p) => p.url());
    noURL(urlsB, userA, 'B after reconnecting');
    // Storage survived the reconnect.
    const pa = a.contexts()[0].pages().find((p) => p.url().includes(`user=${encodeURIComponent(userA)}`));
    const who = await pa.evaluate(() => localStorage.getItem('who'));
    if (who !== userA) throw new Error(`A's localStorage after reconnect: ${who}`);
    return { a: urls, b: urlsB };
  });

  await steps.run('close', async () => {
    await Promise.all([a.close(), b.close()]);
  });
}

async function puppeteerFlow() {
  // Puppeteer 24 sends connect's headers only with browserWSEndpoint (with
  // browserURL it drops them), so read the endpoint from /json/version.
  const connect = async (who) => {
    const resp = await fetch(new URL('/json/version', env.endpoint), { headers: { [header]: who } });
    const { webSocketDebuggerUrl } = await resp.json();
    return puppeteer.connect({
      browserWSEndpoint: webSocketDebuggerUrl, headers: { [header]: who }, protocolTimeout: T,
      defaultViewport: { width: 800, height: 600 },
    });
  };
  let a, b;
  await steps.run('connect', async () => {
    [a, b] = await Promise.all([connect(userA), connect(userB)]);
  });
  if (!a || !b) return;
  let pageA, targetAId;

  await steps.run('userAStorage', async () => {
    pageA = await a.newPage();
    await pageA.goto(urlFor(userA), { timeout: T });
    return checkMark(await pageA.evaluate(markScript, userA), userA);
  });

  await steps.run('userBStorage', async () => {
    const p = await b.newPage();
    await p.goto(urlFor(userB), { timeout: T });
    return checkMark(await p.evaluate(markScript, userB), userB);
  });

  await steps.run('pagesHidden', async () => {
    await new Promise((r) => setTimeout(r, 300));
    const urlsA = (await a.pages()).map((p) => p.url());
    const urlsB = (await b.pages()).map((p) => p.url());
    const targetsB = b.targets().map((t) => t.url());
    hasURL(urlsA, userA, 'A pages');
    hasURL(urlsB, userB, 'B pages');
    noURL(urlsA, userB, 'A pages');
    noURL(urlsB, userA, 'B pages');
    noURL(targetsB, userA, 'B targets');
    targetAId = pageA.target()._targetId ?? pageA.target()._getTargetInfo().targetId;
    return { a: urlsA, b: urlsB };
  });

  await steps.run('crossAttachRefused', async () => {
    if (!targetAId) throw new Error('no target of A known');
    const msg = await refused(b._connection.send('Target.attachToTarget', { targetId: targetAId, flatten: true }), 'B attaching to A\'s page');
    await refused(b._connection.send('Target.closeTarget', { targetId: targetAId }), 'B closing A\'s page');
    return msg;
  });

  await steps.run('closeLeavesOther', async () => {
    // Puppeteer's close sends Browser.close: only B's own tabs may go.
    await withTimeout(b.close(), T, 'B browser.close');
    const marker = await pageA.evaluate(() => document.getElementById('marker')?.textContent);
    if (marker !== 'allowed-page-marker') throw new Error(`A's page after B's Browser.close: ${marker}`);
    const p = await a.newPage();
    const resp = await p.goto(urlFor(`${userA}-after`), { timeout: T });
    if (!resp || resp.status() !== 200) throw new Error(`A's new page after B closed: ${resp && resp.status()}`);
    await p.close();
    return { status: resp.status() };
  });

  await steps.run('reconnectSeesOwn', async () => {
    await a.disconnect();
    a = await connect(userA);
    const urls = (await a.pages()).map((p) => p.url());
    hasURL(urls, userA, 'A after reconnecting');
    b = await connect(userB);
    const urlsB = (await b.pages()).map((p) => p.url());
    noURL(urlsB, userA, 'B after reconnecting');
    // B's Browser.close closed B's tabs.
    noURL(urlsB, userB, 'B after its Browser.close');
    return { a: urls, b: urlsB };
  });

  await steps.run('close', async () => {
    await Promise.all([a.disconnect(), b.disconnect()]);
  });
}

if (mode === 'playwright') await playwrightFlow();
else if (mode === 'puppeteer') await puppeteerFlow();
else steps.result.error = `unknown mode ${mode}`, steps.result.ok = false;
steps.finish();
