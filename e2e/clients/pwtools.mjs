// pwtools.mjs prints @playwright/mcp's own tools/list (its default tool set,
// as a model sees it) as one JSON line: the conformance check's reference
// (e2e/mcptools_test.go). It starts the installed @playwright/mcp over
// stdio; listing tools opens no browser.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../node_modules/@playwright/mcp/cli.js', import.meta.url));
const timer = setTimeout(() => { console.error('pwtools: timed out'); process.exit(2); }, 60000);
const client = new Client({ name: 'e2e-pwtools', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, '--headless'], stderr: 'inherit' }));
const { tools } = await client.listTools();
const version = (await import('../node_modules/@playwright/mcp/package.json', { with: { type: 'json' } })).default.version;
console.log(JSON.stringify({ version, tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })) }));
clearTimeout(timer);
await client.close();
process.exit(0);
