// Called on a <select> (this) with the values or labels to select; returns
// the labels selected, or an error sentence for the model.
function (values) {
  const el = this;
  if (!el || el.tagName !== 'SELECT') return { error: 'the element is not a <select>; take a new snapshot and pick a combobox or listbox' };
  const want = new Set(values);
  const picked = [];
  for (const opt of el.options) {
    const hit = want.has(opt.value) || want.has(opt.label) || want.has(opt.text.trim());
    if (hit && (el.multiple || picked.length === 0)) {
      opt.selected = true;
      picked.push(opt.label || opt.text);
    } else if (el.multiple || hit) {
      opt.selected = false;
    }
  }
  if (picked.length === 0) {
    return { error: 'no option matches ' + JSON.stringify(values) + '; options are ' + JSON.stringify(Array.from(el.options, (o) => o.label || o.value)) };
  }
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { picked };
}
