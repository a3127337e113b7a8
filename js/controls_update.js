function (state) {
  const c = globalThis.cdpguardControls;
  return c ? c.update(state) : false;
}
