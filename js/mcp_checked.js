// Called on a checkbox or radio (this) by browser_fill_form: is it checked?
function () {
  const el = this;
  if ('checked' in el) return !!el.checked;
  return el.getAttribute('aria-checked') === 'true';
}
