// Evaluated by the MCP server's browser_wait_for: the rendered text of
// the page's main region (the main, article or role=main element with the
// most text, else body), with the URL of each link to another site written
// after its text.
(() => {
  let root = document.body;
  let best = 0;
  for (const el of document.querySelectorAll('main, article, [role=main]')) {
    const n = el.innerText.length;
    if (n > best) { best = n; root = el; }
  }
  let text = root ? root.innerText : '';
  if (root) {
    for (const a of root.querySelectorAll('a[href]')) {
      let href;
      try { href = new URL(a.getAttribute('href'), location.href); } catch (e) { continue; }
      const label = a.innerText.trim();
      if (href.origin === location.origin || !label) continue;
      text = text.replace(label, label + ' (' + href.href + ')');
    }
  }
  return { url: location.href, title: document.title, text };
})()
