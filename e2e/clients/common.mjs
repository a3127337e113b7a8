// common.mjs holds what the client scripts share: reading the environment,
// running named steps with timeouts, and printing one JSON result line.
//
// Environment: CDPGUARD_URL (the endpoint, http://127.0.0.1:PORT),
// ALLOWED_URL (an allowed page), POPUP_URL (an allowed page to open with
// window.open), FORBIDDEN_URL (a URL on a forbidden host), EXPECT_TEXT
// (comma-separated strings the explanation page must contain), STEP_TIMEOUT_MS.

export const env = {
  endpoint: need('CDPGUARD_URL'),
  allowed: need('ALLOWED_URL'),
  popup: need('POPUP_URL'),
  forbidden: need('FORBIDDEN_URL'),
  expect: (process.env.EXPECT_TEXT || 'allowed.test').split(',').filter(Boolean),
  stepTimeout: Number(process.env.STEP_TIMEOUT_MS || 15000),
};

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.log(JSON.stringify({ ok: false, error: `missing env ${name}` }));
    process.exit(2);
  }
  return v;
}

// withTimeout rejects when p takes longer than ms.
export function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// Steps records named steps; a failed step is recorded and later steps still
// run, so one result line shows every check.
export class Steps {
  constructor(client) {
    this.result = { client, ok: true, steps: [] };
  }

  async run(name, fn) {
    const started = Date.now();
    try {
      const detail = await withTimeout(Promise.resolve().then(fn), env.stepTimeout, name);
      this.result.steps.push({ name, ok: true, ms: Date.now() - started, detail: plain(detail) });
      return detail;
    } catch (e) {
      this.result.ok = false;
      this.result.steps.push({ name, ok: false, ms: Date.now() - started, error: String(e && e.stack || e) });
      return undefined;
    }
  }

  // finish prints the result line and exits: 0 when every step passed.
  finish() {
    console.log(JSON.stringify(this.result));
    process.exit(this.result.ok ? 0 : 1);
  }
}

// plain keeps plain data for the report and drops client objects.
function plain(v) {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype) return v;
  return null;
}

// isPNG checks the PNG signature.
export function isPNG(buf) {
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  return buf && buf.length > sig.length && sig.every((b, i) => buf[i] === b);
}

// checkExplanation asserts that the text of the page shown for a blocked
// navigation names what the operator allows.
export function checkExplanation(text) {
  const missing = env.expect.filter((s) => !text.includes(s));
  if (missing.length) {
    throw new Error(`explanation page lacks ${JSON.stringify(missing)}; page text: ${JSON.stringify(text.slice(0, 500))}`);
  }
  return { chars: text.length };
}

// watchdog ends the process if the whole flow takes too long.
export function watchdog(ms, steps) {
  setTimeout(() => {
    steps.result.ok = false;
    steps.result.error = `watchdog: flow took more than ${ms} ms`;
    console.log(JSON.stringify(steps.result));
    process.exit(3);
  }, ms).unref();
}
