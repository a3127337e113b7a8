// Called on an element (this) before the MCP server clicks or types into
// it: is it rendered, visible and enabled?
function () {
  const el = this;
  if (!el || !el.isConnected) return { visible: false, enabled: false, gone: true };
  const style = el.ownerDocument.defaultView.getComputedStyle(el);
  const rect = el.getBoundingClientRect();
  const visible = style.visibility !== 'hidden' && style.display !== 'none' && rect.width > 0 && rect.height > 0;
  const enabled = !(el.disabled === true || el.getAttribute('aria-disabled') === 'true' || el.closest('fieldset:disabled'));
  return { visible, enabled, gone: false };
}
