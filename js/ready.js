// ready.js is evaluated by cdpguard's reader in its isolated world while it
// waits for a page to finish loading.
document.readyState
