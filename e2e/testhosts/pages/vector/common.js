// common.js is shared by the vector pages. A vector page reads its target
// origin and hit name from the query string, requests hitURL in its own way
// and calls done() once the attempt has settled (or been refused).
const params = new URLSearchParams(location.search);
const target = params.get('target') || '';
const hitName = params.get('name') || 'unnamed';
const hitURL = target + '/hit/' + hitName;

function done(note) {
  window.__vectorNote = String(note === undefined ? '' : note);
  window.__vectorDone = true;
  document.title = 'done';
}
