// Called on an input, textarea or contenteditable element (this) before
// the MCP server types: selects its content so that typing replaces it, as
// Playwright's fill does.
function () {
  const el = this;
  el.focus();
  if (typeof el.select === 'function' && 'value' in el) {
    el.select();
    return true;
  }
  if (el.isContentEditable) {
    const range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    const sel = el.ownerDocument.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    return true;
  }
  return false;
}
