// mcptools.mjs drives the tools and arguments /mcp took from
// @playwright/mcp 0.0.86 on a real page, the way LibreChat does (the MCP
// SDK's StreamableHTTPClientTransport, the user header in requestInit).
//
// Besides common.mjs's environment: MCP_PAGES (the base URL of the MCP test
// pages), UPLOAD_FILE (a file inside the guard's --upload-dir).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, Steps, watchdog, withTimeout } from './common.mjs';

const pages = process.env.MCP_PAGES;
const upload = process.env.UPLOAD_FILE;
const T = env.stepTimeout;
const steps = new Steps('mcptools');
watchdog(150000, steps);
const forbiddenHost = new URL(env.forbidden).hostname;

const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function connect(who) {
  const transport = new StreamableHTTPClientTransport(new URL(env.endpoint + '/mcp'), {
    requestInit: { headers: { 'X-LibreChat-User': who } },
  });
  const client = new Client({ name: `e2e-${who}`, version: '1.0.0' });
  await withTimeout(client.connect(transport), T, `connect /mcp as ${who}`);
  return { who, client };
}

async function callRaw(s, name, args, wantError = false) {
  const res = await s.client.callTool({ name, arguments: args }, undefined, { timeout: T });
  if (Boolean(res.isError) !== wantError) throw new Error(`${name} ${JSON.stringify(args)} for ${s.who}: isError=${res.isError}: ${text(res).slice(0, 800)}`);
  return res;
}
const call = async (s, name, args, wantError) => text(await callRaw(s, name, args, wantError));

function must(t, ...want) {
  for (const w of want) if (!t.includes(w)) throw new Error(`want ${JSON.stringify(w)} in: ${t.slice(0, 1500)}`);
}
function mustNot(t, ...bad) {
  for (const w of bad) if (t.includes(w)) throw new Error(`unwanted ${JSON.stringify(w)} in: ${t.slice(0, 1500)}`);
}
const evalText = (s, fn, extra = {}) => call(s, 'browser_evaluate', { function: fn, ...extra });
// number finds the number of the first request line containing all parts.
function number(list, ...parts) {
  const line = list.split('\n').find((l) => /^\d+\. /.test(l) && parts.every((p) => l.includes(p)));
  if (!line) throw new Error(`no request line with ${parts} in: ${list.slice(0, 1500)}`);
  return Number(line.split('.')[0]);
}

let a, b;
await steps.run('connect', async () => {
  [a, b] = await Promise.all([connect('tools-alice'), connect('tools-bob')]);
  await call(a, 'browser_navigate', { url: pages + 'tools.html?to=' + encodeURIComponent(env.forbidden) });
  // The page's two fetches have ended (events, not time).
  await call(a, 'browser_wait_for', { text: 'DATA DATA-JSON-MARKER' });
  await call(a, 'browser_wait_for', { text: 'FORBIDDEN-FETCH-FAILED' });
});

if (a && b) {
  await steps.run('find', async () => {
    const all = await call(a, 'browser_find', { text: 'apple' });
    must(all, '2 match', 'Apple pie 101', 'Apple crumble 404', 'list');
    const one = await call(a, 'browser_find', { text: 'apple', maxResults: 1 });
    must(one, '2 match', 'showing the first 1', 'Apple pie 101');
    mustNot(one, 'Apple crumble 404');
    const re = await call(a, 'browser_find', { regex: '/cherry TART \\d+/i' });
    must(re, '1 match', 'Cherry tart 303', 'region "Fruits"');
    must(await call(a, 'browser_find', { regex: 'cherry TART' }), 'No matches'); // case-sensitive without /i
    const button = await call(a, 'browser_find', { text: 'Shift me' });
    must(button, 'button "Shift me" [ref=');
    await call(a, 'browser_find', { text: 'a', regex: 'b' }, true);
    return { chars: all.length };
  });
  await steps.run('networkRequests', async () => {
    const api = await call(a, 'browser_network_requests', { filter: 'data\\.json' });
    must(api, 'data.json?probe=1');
    mustNot(api, 'tools.js');
    const plain = await call(a, 'browser_network_requests', {});
    must(plain, 'static request(s) not shown', 'data.json');
    mustNot(plain, 'tools.js');
    must(await call(a, 'browser_network_requests', { static: true }), 'tools.js', 'tools.html');
    const n = number(api, 'data.json');
    const full = await call(a, 'browser_network_request', { index: n });
    must(full, `Request #${n}: GET`, 'data.json?probe=1', 'Status: 200', 'Response headers', 'DATA-JSON-MARKER');
    const body = await call(a, 'browser_network_request', { index: n, part: 'response-body' });
    must(body, 'DATA-JSON-MARKER');
    mustNot(body, 'Response headers');
    must((await call(a, 'browser_network_request', { index: n, part: 'response-headers' })).toLowerCase(), 'content-type');
    await call(a, 'browser_network_request', { index: 100000 }, true);
    return { n };
  });
  await steps.run('networkBlocked', async () => {
    const list = await call(a, 'browser_network_requests', {});
    const n = number(list, forbiddenHost, 'BLOCKED by cdpguard');
    const full = await call(a, 'browser_network_request', { index: n });
    must(full, `Request #${n}`, `BLOCKED by cdpguard (host ${forbiddenHost}):`);
    // Another user's numbers are their own tab's: never alice's traffic.
    await call(b, 'browser_navigate', { url: pages + 'article.html' });
    const bl = await call(b, 'browser_network_requests', { static: true, all: true });
    mustNot(bl, forbiddenHost, 'data.json', 'tools.html');
    for (let i = 1; i <= n + 2; i++) {
      const res = await s_call(b, i);
      mustNot(res, forbiddenHost, 'data.json', 'DATA-JSON-MARKER', 'tools.html');
    }
    return { n };
  });
  await steps.run('emulateMedia', async () => {
    const dark = () => evalText(a, "() => matchMedia('(prefers-color-scheme: dark)').matches");
    must(await dark(), 'false');
    must(await call(a, 'browser_emulate_media', { colorScheme: 'dark' }), 'colorScheme=dark');
    must(await dark(), 'true');
    must(await evalText(a, '() => getComputedStyle(document.body).backgroundColor'), 'rgb(0, 0, 0)');
    await call(a, 'browser_emulate_media', { media: 'print', reducedMotion: 'reduce' });
    must(await evalText(a, "() => [matchMedia('print').matches, matchMedia('(prefers-reduced-motion: reduce)').matches, matchMedia('(prefers-color-scheme: dark)').matches].join()"), 'true,true,true');
    await call(a, 'browser_emulate_media', { colorScheme: '', media: '' });
    must(await dark(), 'false');
    await call(a, 'browser_emulate_media', { colorScheme: 'sepia' }, true);
  });
  await steps.run('consoleLevels', async () => {
    const err = await call(a, 'browser_console_messages', { level: 'error' });
    must(err, 'TOOLS-ERROR-MARKER');
    mustNot(err, 'TOOLS-WARN-MARKER', 'TOOLS-INFO-MARKER', 'TOOLS-DEBUG-MARKER');
    const warn = await call(a, 'browser_console_messages', { level: 'warning' });
    must(warn, 'TOOLS-ERROR-MARKER', 'TOOLS-WARN-MARKER');
    mustNot(warn, 'TOOLS-INFO-MARKER', 'TOOLS-DEBUG-MARKER');
    const info = await call(a, 'browser_console_messages', {});
    must(info, 'TOOLS-ERROR-MARKER', 'TOOLS-WARN-MARKER', 'TOOLS-INFO-MARKER');
    mustNot(info, 'TOOLS-DEBUG-MARKER');
    must(await call(a, 'browser_console_messages', { level: 'debug' }), 'TOOLS-DEBUG-MARKER');
    await call(a, 'browser_console_messages', { level: 'loud' }, true);
  });
  await steps.run('evaluateTarget', async () => {
    must(await evalText(a, '(element) => element.textContent', { target: '#box' }), 'BOX');
    const snap = await call(a, 'browser_snapshot', {});
    const ref = snap.match(/button "Shift me" \[ref=(e\d+)\]/)[1];
    must(await evalText(a, '(el) => el.tagName + ":" + el.id', { element: 'Shift me', target: ref }), 'BUTTON:shift');
  });
  await steps.run('screenshotElement', async () => {
    const res = await callRaw(a, 'browser_take_screenshot', { target: '#box' });
    const img = res.content.find((c) => c.type === 'image');
    if (!img || img.mimeType !== 'image/png') throw new Error(`no PNG: ${JSON.stringify(res.content.map((c) => c.type))}`);
    const png = Buffer.from(img.data, 'base64');
    const w = png.readUInt32BE(16), h = png.readUInt32BE(20);
    if (w !== 120 || h !== 80) throw new Error(`element screenshot is ${w}x${h}, want 120x80`);
    if (img.data.length > 1000000) throw new Error(`image over the bound: ${img.data.length}`);
    must(text(res), 'the element #box', '120×80 CSS px');
    const jpeg = await callRaw(a, 'browser_take_screenshot', { target: '#box', type: 'jpeg' });
    if (jpeg.content.find((c) => c.type === 'image').mimeType !== 'image/jpeg') throw new Error('type jpeg gave another format');
    await call(a, 'browser_take_screenshot', { target: '#box', fullPage: true }, true);
    return { bytes: png.length };
  });
  await steps.run('snapshotPart', async () => {
    const part = await call(a, 'browser_snapshot', { target: '#fruits' });
    must(part, 'region "Fruits"', 'Apple pie 101', 'Cherry tart 303');
    mustNot(part, 'Shift me', 'Tool checks"');
    const shallow = await call(a, 'browser_snapshot', { depth: 1 });
    must(shallow, 'heading "Tool checks"', 'main', 'not shown');
    mustNot(shallow, 'Apple pie 101', 'Shift me');
    const both = await call(a, 'browser_snapshot', { target: '#fruits', depth: 1 });
    must(both, 'region "Fruits"');
    mustNot(both, 'Apple pie 101');
    // Refs of a part are the whole snapshot's.
    const whole = await call(a, 'browser_snapshot', {});
    const sub = await call(a, 'browser_snapshot', { target: 'main' });
    const refIn = (t) => t.match(/button "Shift me" \[ref=(e\d+)\]/)[1];
    if (refIn(whole) !== refIn(sub)) throw new Error(`ref differs: ${refIn(whole)} vs ${refIn(sub)}`);
    must(await call(a, 'browser_snapshot', { target: 'main', boxes: true }), '[box=');
  });
  await steps.run('clickModifiers', async () => {
    await call(a, 'browser_click', { target: '#shift', modifiers: ['Shift'] });
    must(await evalText(a, "() => document.getElementById('out').textContent"), 'CLICKED shift=true ctrl=false alt=false');
    await call(a, 'browser_click', { target: '#shift', modifiers: ['ControlOrMeta', 'Alt'] });
    must(await evalText(a, "() => document.getElementById('out').textContent"), 'CLICKED shift=false ctrl=true alt=true');
    await call(a, 'browser_click', { target: '#shift' });
    must(await evalText(a, "() => document.getElementById('out').textContent"), 'CLICKED shift=false ctrl=false alt=false');
    await call(a, 'browser_click', { target: '#shift', modifiers: ['Hyper'] }, true);
  });
  await steps.run('typeSlowly', async () => {
    await call(a, 'browser_type', { target: '#slow', text: 'abc', slowly: true });
    must(await evalText(a, "() => document.getElementById('keys').textContent + '|' + document.getElementById('slow').value"), 'KEYS 3|abc');
  });
  await steps.run('fillSlider', async () => {
    must(await call(a, 'browser_fill_form', { fields: [{ element: 'Level', target: '#level', name: 'Level', type: 'slider', value: '7' }] }), 'Filled 1 field');
    must(await evalText(a, "() => 'LEVEL ' + document.getElementById('level').value"), 'LEVEL 7');
  });
  await steps.run('tabsContext', async () => {
    must(await call(a, 'browser_tabs', { action: 'new', isolatedContext: 'other' }, true), 'one browser context');
  });
  await steps.run('upload', async () => {
    must(await call(a, 'browser_file_upload', { paths: [upload] }), 'Set 1 file');
    must(await evalText(a, "() => document.getElementById('files').textContent"), 'FILES upload-me.txt');
    await call(a, 'browser_file_upload', { paths: ['/etc/passwd'] }, true);
  });
  await steps.run('drop', async () => {
    must(await call(a, 'browser_drop', { target: '#drop', paths: [upload], data: { 'text/plain': 'hello-drop' } }), 'Dropped 1 file(s)');
    must(await evalText(a, "() => document.getElementById('dropped').textContent"), 'DROPPED text=hello-drop files=upload-me.txt');
    await call(a, 'browser_drop', { target: '#drop', paths: ['/etc/passwd'] }, true);
    await call(a, 'browser_drop', { target: '#drop' }, true);
  });
  await steps.run('sinceNavigation', async () => {
    await call(a, 'browser_navigate', { url: pages + 'article.html' });
    const now = await call(a, 'browser_console_messages', { level: 'debug' });
    mustNot(now, 'TOOLS-ERROR-MARKER');
    must(now, 'before the last navigation');
    must(await call(a, 'browser_console_messages', { level: 'debug', all: true }), 'TOOLS-ERROR-MARKER', 'TOOLS-DEBUG-MARKER');
    const net = await call(a, 'browser_network_requests', { static: true });
    must(net, 'article.html');
    mustNot(net, 'data.json');
    must(await call(a, 'browser_network_requests', { all: true }), 'data.json');
  });
  await Promise.all([a.client.close(), b.client.close()]);
}
steps.finish();

// s_call asks bob's /mcp for request i: an error (no such request) or bob's own.
async function s_call(s, i) {
  const res = await s.client.callTool({ name: 'browser_network_request', arguments: { index: i } }, undefined, { timeout: T });
  return text(res);
}
