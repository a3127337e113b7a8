// mcp.mjs drives the whole agent stack: two @playwright/mcp servers, each
// started with --cdp-endpoint pointing at the guard and --cdp-header for its
// own user, driven by the MCP SDK's client over stdio, as LibreChat does.
//
// Besides common.mjs's environment: MCP_CLI (path of @playwright/mcp's
// cli.js), USER_A and USER_B (the two users' header values), SESSION_HEADER
// (default X-LibreChat-User), OUTPUT_DIR (where the servers may write).
// The servers are closed at the end (the SDK's transport ends them; the Go
// test also kills the process group).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, Steps, watchdog, withTimeout } from './common.mjs';

const header = process.env.SESSION_HEADER || 'X-LibreChat-User';
const userA = process.env.USER_A || 'mcp-alice';
const userB = process.env.USER_B || 'mcp-bob';
const cli = process.env.MCP_CLI;
const outDir = process.env.OUTPUT_DIR || '/tmp';
const T = env.stepTimeout;
const steps = new Steps('mcp');
watchdog(150000, steps);

const urlFor = (who) => `${env.allowed}?user=${encodeURIComponent(who)}`;

// text joins a tool result's text parts.
function text(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const servers = [];

// start runs one @playwright/mcp server for user who and connects a client.
async function start(who) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, '--cdp-endpoint', env.endpoint, '--cdp-header', `${header}:${who}`,
      '--output-dir', `${outDir}/${who}`, '--cdp-timeout', String(T)],
    cwd: outDir,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const client = new Client({ name: `cdpguard-e2e-${who}`, version: '1.0.0' });
  const s = { who, client, transport, stderr: () => stderr };
  servers.push(s);
  await withTimeout(client.connect(transport), T, `connect MCP server for ${who}`);
  return s;
}

// call calls a tool, bounded, and fails on a tool error.
async function call(s, name, args) {
  const res = await s.client.callTool({ name, arguments: args }, undefined, { timeout: T });
  const t = text(res);
  if (res.isError) throw new Error(`${name} for ${s.who} returned an error: ${t.slice(0, 800)}\nserver stderr: ${s.stderr()}`);
  return t;
}

// withSnapshot adds the page snapshot to a tool result. @playwright/mcp
// 0.0.83 writes the snapshot of browser_navigate to a file under its output
// directory and links it as "[Snapshot](path)"; older versions inline it.
function withSnapshot(t) {
  const m = t.match(/\[Snapshot\]\(([^)]+)\)/);
  if (!m) return t;
  try {
    return t + '\n' + readFileSync(resolve(outDir, m[1]), 'utf8');
  } catch (e) {
    throw new Error(`snapshot file ${m[1]} unreadable: ${e.message}`);
  }
}

// navigate calls browser_navigate and returns its result with the snapshot
// it links, then browser_snapshot's inline snapshot: both must show the page.
async function navigate(s, url) {
  const nav = withSnapshot(await call(s, 'browser_navigate', { url }));
  const snap = await call(s, 'browser_snapshot', {});
  return { nav, snap };
}

let a, b;
await steps.run('startServers', async () => {
  [a, b] = await Promise.all([start(userA), start(userB)]);
  const tools = (await a.client.listTools(undefined, { timeout: T })).tools.map((t) => t.name);
  for (const need of ['browser_navigate', 'browser_tabs', 'browser_snapshot']) {
    if (!tools.includes(need)) throw new Error(`server lacks ${need}: ${tools}`);
  }
  return { tools: tools.length };
});

if (a && b) {
  await steps.run('navigateAllowed', async () => {
    const { nav, snap } = await navigate(a, urlFor(userA));
    for (const [what, t] of [['browser_navigate', nav], ['browser_snapshot', snap]]) {
      if (!t.includes('allowed-page-marker')) throw new Error(`no page content in ${what} result: ${t.slice(0, 1500)}`);
    }
    return { nav: nav.length, snap: snap.length };
  });

  await steps.run('navigateForbidden', async () => {
    const { nav, snap } = await navigate(a, env.forbidden);
    for (const [what, t] of [['browser_navigate', nav], ['browser_snapshot', snap]]) {
      const missing = env.expect.filter((x) => !t.includes(x));
      if (missing.length) throw new Error(`${what} result lacks ${JSON.stringify(missing)}: ${t.slice(0, 1500)}`);
      if (t.includes('FORBIDDEN HOST REACHED')) throw new Error('the forbidden host answered');
    }
    if (!nav.includes('403')) throw new Error(`browser_navigate does not report the 403: ${nav.slice(0, 800)}`);
    return { nav: nav.slice(0, 300), snap: snap.slice(0, 600) };
  });

  await steps.run('navigateOtherUser', async () => {
    const { nav, snap } = await navigate(b, urlFor(userB));
    if (!nav.includes('allowed-page-marker') || !snap.includes('allowed-page-marker')) {
      throw new Error(`no page content in result: ${nav.slice(0, 1500)}`);
    }
    return { nav: nav.length, snap: snap.length };
  });

  await steps.run('tabsIsolated', async () => {
    // A opens a second tab so that A has two pages B must not see.
    await call(a, 'browser_tabs', { action: 'new', url: urlFor(`${userA}-2`) });
    const ta = await call(a, 'browser_tabs', { action: 'list' });
    const tb = await call(b, 'browser_tabs', { action: 'list' });
    const mark = (who) => `user=${encodeURIComponent(who)}`;
    if (!ta.includes(mark(`${userA}-2`))) throw new Error(`A's tab list lacks its own tab: ${ta}`);
    if (!tb.includes(mark(userB))) throw new Error(`B's tab list lacks its own tab: ${tb}`);
    if (tb.includes(mark(userA)) || tb.includes(mark(`${userA}-2`))) throw new Error(`B sees A's tabs: ${tb}`);
    if (ta.includes(mark(userB))) throw new Error(`A sees B's tabs: ${ta}`);
    return { a: ta.slice(0, 400), b: tb.slice(0, 400) };
  });

  await steps.run('storageIsolated', async () => {
    await call(a, 'browser_evaluate', { function: `() => { localStorage.setItem('who', ${JSON.stringify(userA)}); return 'set'; }` });
    const t = await call(b, 'browser_evaluate', { function: `() => 'who=' + localStorage.getItem('who')` });
    if (!t.includes('who=null')) throw new Error(`B reads A's localStorage: ${t.slice(0, 400)}`);
    return { b: t.slice(0, 200) };
  });
}

await steps.run('close', async () => {
  await Promise.all(servers.map((s) => withTimeout(s.client.close(), T, `close MCP server for ${s.who}`)));
});

steps.finish();
