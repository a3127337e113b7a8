// settle.js is evaluated by cdpguard's reader in its isolated world while it
// waits for a page that renders by script to settle: the load state, the
// network (the resource timing entries, which complete requests add) and
// the DOM (element count and text length), and when the load event ended. It reads; it changes nothing.
(() => {
  const entries = performance.getEntriesByType('resource');
  let lastNet = 0;
  for (const e of entries) {
    lastNet = Math.max(lastNet, e.responseEnd);
  }
  const nav = performance.getEntriesByType('navigation')[0];
  const body = document.body;
  return {
    state: document.readyState,
    now: performance.now(),
    lastNet,
    loaded: nav ? nav.loadEventEnd : 0,
    resources: entries.length,
    nodes: document.getElementsByTagName('*').length,
    text: body ? body.textContent.length : 0,
  };
})()
