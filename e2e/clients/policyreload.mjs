// policyreload.mjs keeps a Playwright user and an MCP user connected while
// the Go test changes the policy file under the guard, and does what the
// test asks, one JSON command a line on stdin, one JSON answer a line on
// stdout: {"id":1,"op":"pw.goto","who":"pw","url":"..."} → {"id":1,"ok":true,...}.
// Connections, pages and MCP sessions live across commands, so the test can
// check that a reload keeps them.
//
// Environment: CDPGUARD_URL (the endpoint), STEP_TIMEOUT_MS.
import readline from 'node:readline';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const endpoint = process.env.CDPGUARD_URL;
const T = Number(process.env.STEP_TIMEOUT_MS || 15000);
const pw = new Map();  // who → {browser, page, ws}
const mcp = new Map(); // who → {client, changed}

function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// waitFor polls cond every 20 ms until it is true or ms pass.
async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ops = {
  async 'pw.open'({ who, headers }) {
    const browser = await chromium.connectOverCDP(endpoint, { headers, timeout: T });
    const ctx = browser.contexts()[0];
    const page = ctx.pages()[0] || await ctx.newPage();
    pw.set(who, { browser, page });
    return {};
  },
  async 'pw.goto'({ who, url }) {
    const { page } = pw.get(who);
    const resp = await page.goto(url, { timeout: T }).catch((e) => ({ error: String(e) }));
    if (resp && resp.error) return { error: resp.error };
    return { status: resp ? resp.status() : 0, body: (await page.innerText('body').catch(() => '')).slice(0, 4000), pages: page.context().pages().length };
  },
  // pw.tab opens a second tab at url, which holds the WebSocket while the
  // first tab navigates (a navigation would close it).
  async 'pw.tab'({ who, url }) {
    const u = pw.get(who);
    u.tab = await u.page.context().newPage();
    await u.tab.goto(url, { timeout: T });
    return {};
  },
  // pw.ws opens a WebSocket from the second tab and waits for it to open or fail.
  async 'pw.ws'({ who, url }) {
    const page = pw.get(who).tab;
    return page.evaluate(([u, ms]) => new Promise((resolve) => {
      const ws = new WebSocket(u);
      window.__ws = ws;
      window.__wsClosed = null;
      ws.onclose = (e) => { window.__wsClosed = { code: e.code }; };
      ws.onopen = () => resolve({ open: true });
      ws.onerror = () => resolve({ open: false });
      setTimeout(() => resolve({ open: false, timeout: true }), ms);
    }), [url, T]);
  },
  // pw.wsEcho sends a message on the open WebSocket and waits for its echo.
  async 'pw.wsEcho'({ who, msg }) {
    const page = pw.get(who).tab;
    return page.evaluate(([m, ms]) => new Promise((resolve) => {
      const ws = window.__ws;
      if (!ws || ws.readyState !== 1) return resolve({ echoed: false, state: ws && ws.readyState });
      ws.onmessage = (e) => resolve({ echoed: e.data === m });
      ws.send(m);
      setTimeout(() => resolve({ echoed: false, timeout: true }), ms);
    }), [msg, T]);
  },
  // pw.wsClosed waits (bounded) for the open WebSocket's close event.
  async 'pw.wsClosed'({ who }) {
    const page = pw.get(who).tab;
    await waitFor(() => page.evaluate(() => window.__wsClosed !== null), T, 'WebSocket close');
    return page.evaluate(() => window.__wsClosed);
  },
  async 'mcp.open'({ who, headers }) {
    const transport = new StreamableHTTPClientTransport(new URL(endpoint + '/mcp'), { requestInit: { headers } });
    const client = new Client({ name: `e2e-${who}`, version: '1.0.0' });
    const s = { client, changed: 0 };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { s.changed++; });
    await withTimeout(client.connect(transport), T, 'mcp connect');
    mcp.set(who, s);
    return { instructions: client.getInstructions() || '' };
  },
  async 'mcp.call'({ who, tool, args }) {
    const res = await mcp.get(who).client.callTool({ name: tool, arguments: args }, undefined, { timeout: T });
    return { isError: Boolean(res.isError), text: text(res).slice(0, 4000) };
  },
  async 'mcp.tools'({ who }) {
    const res = await mcp.get(who).client.listTools(undefined, { timeout: T });
    return { tools: res.tools.map((t) => ({ name: t.name, description: t.description })) };
  },
  // mcp.changed waits (bounded) until at least n tools/list_changed arrived.
  async 'mcp.changed'({ who, n }) {
    const s = mcp.get(who);
    await waitFor(() => s.changed >= n, T, `tools/list_changed #${n}`);
    return { changed: s.changed };
  },
};

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.op === 'exit') break;
  let out;
  try {
    out = { id: cmd.id, ok: true, ...(await withTimeout(ops[cmd.op](cmd), T + 5000, cmd.op)) };
  } catch (e) {
    out = { id: cmd.id, ok: false, error: String(e && e.stack || e) };
  }
  console.log(JSON.stringify(out));
}
for (const { browser } of pw.values()) await browser.close().catch(() => {});
for (const { client } of mcp.values()) await client.close().catch(() => {});
process.exit(0);
