// sw.js is a service worker that requests the hit URL on install (mode
// install) or from its fetch handler (mode handler).
const params = new URLSearchParams(self.location.search);
const hitURL = (params.get('target') || '') + '/hit/' + (params.get('name') || 'unnamed');
const mode = params.get('mode');
self.addEventListener('install', (e) => {
  self.skipWaiting();
  if (mode === 'install') {
    e.waitUntil(fetch(hitURL, {mode: 'no-cors', cache: 'no-store'}).catch(() => {}));
  }
});
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  if (mode !== 'handler' || !e.request.url.includes('/sw-scope/')) return;
  e.respondWith(fetch(hitURL, {mode: 'no-cors', cache: 'no-store'}).then(
    () => new Response('<p>handler fetched</p>', {headers: {'Content-Type': 'text/html'}}),
    () => new Response('<p>handler fetch failed</p>', {headers: {'Content-Type': 'text/html'}}),
  ));
});
