// mcpserver.mjs drives cdpguard's own /mcp the way LibreChat does: the MCP
// SDK's StreamableHTTPClientTransport with the user header in
// requestInit.headers, two users at once.
//
// Besides common.mjs's environment: MCP_PAGES (the base URL of the MCP test
// pages, http://allowed.test:P/mcp/), SESSION_HEADER (default
// X-LibreChat-User).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, Steps, watchdog, withTimeout } from './common.mjs';

const header = process.env.SESSION_HEADER || 'X-LibreChat-User';
const pages = process.env.MCP_PAGES;
const T = env.stepTimeout;
const steps = new Steps('mcpserver');
watchdog(100000, steps);

const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function connect(who) {
  const transport = new StreamableHTTPClientTransport(new URL(env.endpoint + '/mcp'), {
    requestInit: { headers: { [header]: who } },
  });
  const client = new Client({ name: `e2e-${who}`, version: '1.0.0' });
  await withTimeout(client.connect(transport), T, `connect /mcp as ${who}`);
  return { who, client };
}

// call runs a tool; wantError says whether it must be a tool error.
async function call(s, name, args, wantError = false) {
  const res = await s.client.callTool({ name, arguments: args }, undefined, { timeout: T });
  const t = text(res);
  if (Boolean(res.isError) !== wantError) throw new Error(`${name} ${JSON.stringify(args)} for ${s.who}: isError=${res.isError}: ${t.slice(0, 800)}`);
  return t;
}

function must(t, ...want) {
  for (const w of want) if (!t.includes(w)) throw new Error(`want ${JSON.stringify(w)} in: ${t.slice(0, 1500)}`);
}

function ref(snap, ...parts) {
  const line = snap.split('\n').find((l) => parts.every((p) => l.includes(p)) && l.includes('[ref='));
  if (!line) throw new Error(`no ref for ${parts} in ${snap.slice(0, 1500)}`);
  return line.match(/\[ref=(e\d+)\]/)[1];
}

let a, b;
await steps.run('connect', async () => {
  [a, b] = await Promise.all([connect('node-alice'), connect('node-bob')]);
  const inst = a.client.getInstructions() || '';
  must(inst, 'allowed.test', 'browser_read');
  const tools = (await a.client.listTools(undefined, { timeout: T })).tools.map((t) => t.name);
  for (const need of ['browser_navigate', 'browser_read', 'browser_snapshot', 'browser_click', 'browser_tabs']) {
    if (!tools.includes(need)) throw new Error(`no ${need} in ${tools}`);
  }
  const bad = tools.filter((n) => /run_code|install|file/.test(n));
  if (bad.length) throw new Error(`tools that reach outside the browser: ${bad}`);
  return { tools: tools.length };
});

if (a && b) {
  await steps.run('read', async () => {
    const t = await call(a, 'browser_read', { url: pages + 'article.html' });
    must(t, 'ARTICLE-BODY-MARKER', 'https://example.org/otter-survey');
    if (t.includes('NAVIGATION-MARKER')) throw new Error('navigation in browser_read');
    return t.length;
  });
  await steps.run('snapshotClick', async () => {
    const snap = await call(a, 'browser_snapshot', {});
    await call(a, 'browser_click', { element: 'second part', ref: ref(snap, 'link "the second part"') });
    must(await call(a, 'browser_read', {}), 'SECOND-PAGE-MARKER');
  });
  await steps.run('form', async () => {
    await call(a, 'browser_navigate', { url: pages + 'form.html' });
    const snap = await call(a, 'browser_snapshot', {});
    await call(a, 'browser_type', { element: 'name', ref: ref(snap, 'textbox', 'Name'), text: 'Node', submit: false });
    await call(a, 'browser_select_option', { element: 'colour', ref: ref(snap, 'combobox'), values: ['b'] });
    await call(a, 'browser_click', { element: 'send', ref: ref(snap, 'button "Send"') });
    must(await call(a, 'browser_read', {}), 'RESULT name=Node colour=b');
  });
  await steps.run('dialogTarget', async () => {
    // @playwright/mcp-shaped arguments (target), and a confirm the model accepts.
    await call(a, 'browser_navigate', { url: pages + 'dialogs.html' });
    must(await call(a, 'browser_click', { target: 'button:nth-of-type(1)' }), 'confirm dialog', 'browser_handle_dialog');
    await call(a, 'browser_handle_dialog', { accept: true });
    must(await call(a, 'browser_read', {}), 'DELETED');
  });
  await steps.run('blocked', async () => {
    const t = await call(a, 'browser_navigate', { url: env.forbidden }, true);
    must(t, 'evil.test', 'allowed.test');
  });
  await steps.run('isolated', async () => {
    await call(b, 'browser_navigate', { url: pages + 'tabs.html' });
    const ta = await call(a, 'browser_tabs', { action: 'list' });
    const tb = await call(b, 'browser_tabs', { action: 'list' });
    if (ta.includes('tabs.html') || tb.includes('result.html')) throw new Error(`tabs leak: A ${ta} / B ${tb}`);
  });
  await steps.run('parallel', async () => {
    const urls = ['article.html', 'next.html', 'form.html'].map((p) => pages + p);
    const outs = await Promise.all(urls.map((url) => call(a, 'browser_read', { url })));
    must(outs[0], 'ARTICLE-BODY-MARKER');
    must(outs[1], 'SECOND-PAGE-MARKER');
    must(outs[2], 'Contact form');
  });
  await Promise.all([a.client.close(), b.client.close()]);
}
steps.finish();
