// Shows the submitted form fields, so the MCP test can read them back.
const q = new URLSearchParams(location.search);
document.getElementById('r').textContent = 'RESULT name=' + q.get('name') + ' colour=' + q.get('colour');
