// devtoolsmcp.mjs drives Google's chrome-devtools-mcp server, connected to
// the guard with --wsEndpoint and a user header (--wsHeaders), through the
// MCP SDK's client over stdio: list, open, read, evaluate, resize (window
// methods on the browser session), a blocked navigation, close.
//
// Besides common.mjs's environment: DEVTOOLS_MCP_CLI (path of
// chrome-devtools-mcp's bin script), USER_A (the user's header value),
// SESSION_HEADER (default X-LibreChat-User), OUTPUT_DIR (its HOME).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, Steps, watchdog, withTimeout } from './common.mjs';

const header = process.env.SESSION_HEADER || 'X-LibreChat-User';
const who = process.env.USER_A || 'devtools-alice';
const cli = process.env.DEVTOOLS_MCP_CLI;
const home = process.env.OUTPUT_DIR || '/tmp';
const T = env.stepTimeout;
const steps = new Steps('chrome-devtools-mcp');
watchdog(120000, steps);

function text(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

let client, stderr = '', pageId;
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: T });
  const t = text(res);
  if (res.isError) throw new Error(`${name} returned an error: ${t.slice(0, 800)}\nserver stderr: ${stderr.slice(-1500)}`);
  return t;
}

await steps.run('startServer', async () => {
  const v = await (await fetch(`${env.endpoint}/json/version`, { headers: { [header]: who } })).json();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, '--wsEndpoint', v.webSocketDebuggerUrl, '--wsHeaders', JSON.stringify({ [header]: who }),
      '--no-usage-statistics', '--no-performance-crux'],
    env: { ...process.env, HOME: home, CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1', CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1' },
    cwd: home,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  client = new Client({ name: 'cdpguard-e2e-devtools', version: '1.0.0' });
  await withTimeout(client.connect(transport), T, 'connect chrome-devtools-mcp');
  const tools = (await client.listTools(undefined, { timeout: T })).tools.map((t) => t.name);
  for (const need of ['new_page', 'navigate_page', 'take_snapshot', 'evaluate_script', 'resize_page']) {
    if (!tools.includes(need)) throw new Error(`server lacks ${need}: ${tools}`);
  }
  return { tools: tools.length };
});

if (client) {
  await steps.run('newPage', async () => {
    const t = await call('new_page', { url: `${env.allowed}?user=${encodeURIComponent(who)}` });
    // The page list names each page "<pageId>: <url>"; page tools need it.
    const m = t.match(/^(\d+): .*\[selected\]/m);
    if (!m) throw new Error(`new_page result names no selected page id: ${JSON.stringify(t.slice(0, 600))}`);
    pageId = Number(m[1]);
    const snap = await call('take_snapshot', { pageId });
    if (!snap.includes('allowed-page-marker')) throw new Error(`no page content in the snapshot: ${snap.slice(0, 1000)}`);
    return { newPage: t.slice(0, 200) };
  });
  await steps.run('evaluate', async () => {
    const t = await call('evaluate_script', { pageId, function: '() => document.getElementById("marker").textContent' });
    if (!t.includes('allowed-page-marker')) throw new Error(`evaluate_script: ${t.slice(0, 400)}`);
    return { t: t.slice(0, 200) };
  });
  await steps.run('resize', async () => {
    await call('resize_page', { pageId, width: 640, height: 480 });
    const t = await call('evaluate_script', { pageId, function: '() => innerWidth + "x" + innerHeight' });
    if (!t.includes('640x480')) throw new Error(`page size after resize_page: ${t.slice(0, 300)}`);
    return { t: t.slice(0, 200) };
  });
  await steps.run('navigateForbidden', async () => {
    await call('navigate_page', { pageId, type: 'url', url: env.forbidden }).catch((e) => e);
    const snap = await call('take_snapshot', { pageId });
    const missing = env.expect.filter((x) => !snap.includes(x));
    if (missing.length) throw new Error(`the page lacks ${JSON.stringify(missing)}: ${snap.slice(0, 1500)}`);
    return { snap: snap.slice(0, 300) };
  });
  await steps.run('listPages', async () => {
    const t = await call('list_pages', {});
    if (t.includes('chrome://') || t.includes('devtools://')) throw new Error(`list_pages shows Chrome's own pages: ${t}`);
    return { t: t.slice(0, 400) };
  });
  await steps.run('close', async () => {
    await withTimeout(client.close(), T, 'close chrome-devtools-mcp');
  });
}

steps.finish();
