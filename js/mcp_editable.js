// Called on an element (this) before the MCP server types into it: does it
// take text? Nothing is focused or clicked when it does not.
function () {
  const el = this;
  if (!el || !el.isConnected) return false;
  if (el.isContentEditable) return true;
  if (el.tagName === 'TEXTAREA') return !el.readOnly;
  if (el.tagName !== 'INPUT') return false;
  const t = (el.type || 'text').toLowerCase();
  return !el.readOnly && ['text', 'search', 'email', 'url', 'tel', 'password', 'number', 'date', 'datetime-local', 'month', 'time', 'week'].includes(t);
}
