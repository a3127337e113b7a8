// A hostile agent's Runtime.evaluate, sent with guessed contextIds while
// its tab navigates to a blocked URL (cdpguard/controls_race_test.go): in
// the guard's controls world it finds the binding and, once the
// explanation page is up, reports a "trusted" click on Allow.
(() => {
  const k = Object.getOwnPropertyNames(globalThis)
    .find((n) => n.startsWith('cdpguard_') && typeof globalThis[n] === 'function');
  if (!k) return 'no binding here';
  const report = { action: 'allow', label: 'Allow evil.test for this session', trusted: true, active: true, armed: true, visible: true };
  setTimeout(() => globalThis[k](JSON.stringify(report)), 1500);
  return 'sent';
})()
