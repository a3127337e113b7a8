// ws-worker.js opens a WebSocket to the hit URL from a dedicated or a shared
// worker and reports how it ended.
const params = new URLSearchParams(self.location.search);
const hitURL = (params.get('target') || '') + '/hit/' + (params.get('name') || 'unnamed');
const shared = typeof SharedWorkerGlobalScope !== 'undefined' && self instanceof SharedWorkerGlobalScope;
const ports = [];
let result = '';
function report(r) {
  result = r;
  if (!shared) self.postMessage(r);
  for (const p of ports) p.postMessage(r);
}
if (shared) {
  self.onconnect = (e) => { const p = e.ports[0]; ports.push(p); if (result) p.postMessage(result); };
}
const ws = new WebSocket(hitURL.replace(/^http/, 'ws'));
ws.onopen = () => { ws.close(); report('open'); };
ws.onerror = () => report('error');
