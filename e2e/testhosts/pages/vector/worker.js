// worker.js runs in a dedicated worker: it requests hitURL and reports back.
const params = new URLSearchParams(self.location.search);
const hitURL = (params.get('target') || '') + '/hit/' + (params.get('name') || 'unnamed');
fetch(hitURL, {mode: 'no-cors', cache: 'no-store'}).then(
  () => postMessage('ok'),
  (e) => postMessage('error: ' + e),
);
