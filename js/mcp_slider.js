// Called on a slider (this) with the value to set by browser_fill_form's
// slider field: an <input type=range> takes it (clamped and stepped by the
// browser) with input and change events, as Playwright's fill does; returns
// the value it holds, or an error sentence for the model.
function (value) {
  const el = this;
  if (!el || el.tagName !== 'INPUT' || el.type !== 'range') return { error: 'the element is not a slider (<input type=range>); take a new snapshot and pick a slider' };
  el.focus();
  el.value = value;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { value: el.value };
}
