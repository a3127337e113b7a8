// import-scripts.js calls importScripts on the hit URL and reports back.
const params = new URLSearchParams(self.location.search);
const hitURL = (params.get('target') || '') + '/hit/' + (params.get('name') || 'unnamed');
try {
  importScripts(hitURL);
  postMessage('imported');
} catch (e) {
  postMessage('error: ' + e);
}
