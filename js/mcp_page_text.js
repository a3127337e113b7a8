// Evaluated by the MCP server's browser_wait_for: the page's rendered text,
// the whole body (navigation, buttons and all), as @playwright/mcp's
// wait_for looks for its text anywhere on the page: a model waits for a
// button's label as often as for an article's sentence.
(() => ({ url: location.href, title: document.title, text: document.body ? document.body.innerText : '' }))()
