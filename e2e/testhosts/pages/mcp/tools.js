// tools.js: what the MCP tools' e2e checks look at (e2e/clients/mcptools.mjs).
const $ = (id) => document.getElementById(id);
console.error('TOOLS-ERROR-MARKER');
console.warn('TOOLS-WARN-MARKER');
console.log('TOOLS-INFO-MARKER');
console.debug('TOOLS-DEBUG-MARKER');
$('shift').addEventListener('click', (e) => {
  $('out').textContent = `CLICKED shift=${e.shiftKey} ctrl=${e.ctrlKey} alt=${e.altKey}`;
});
let keys = 0;
$('slow').addEventListener('keydown', () => { keys++; $('keys').textContent = `KEYS ${keys}`; });
$('drop').addEventListener('dragover', (e) => e.preventDefault());
$('drop').addEventListener('drop', (e) => {
  e.preventDefault();
  const files = [...e.dataTransfer.files].map((f) => f.name).join(',');
  $('dropped').textContent = `DROPPED text=${e.dataTransfer.getData('text/plain')} files=${files}`;
});
$('file').addEventListener('change', (e) => {
  $('files').textContent = 'FILES ' + [...e.target.files].map((f) => f.name).join(',');
});
fetch('data.json?probe=1').then((r) => r.json()).then((j) => { $('data').textContent = 'DATA ' + j.marker; });
// ?to= a URL the guard must block: the request is listed with its verdict.
const to = new URLSearchParams(location.search).get('to');
if (to) fetch(to).then(() => { $('away').textContent = 'FORBIDDEN-FETCH-PASSED'; }, () => { $('away').textContent = 'FORBIDDEN-FETCH-FAILED'; });
