// Evaluated by the MCP server's browser_read fallback and browser_wait_for:
// the page's rendered text, as a user sees it.
({
  url: location.href,
  title: document.title,
  text: document.body ? document.body.innerText : '',
})
