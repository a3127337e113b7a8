// read.js is called by cdpguard's reader (Runtime.callFunctionOn) in an
// isolated world the guard creates (pristine DOM prototypes: page scripts
// cannot steer it). It returns the page's final URL, its title and the DOM
// serialised without the contents of scripts and styles. With visibleOnly
// it leaves out what is not rendered (display: none, visibility: hidden,
// the hidden attribute; a closed <details> is kept). It stops after
// maxLength characters of HTML (truncated: true), so that no page can make
// the reply too large for the browser connection. It never changes the
// page: no clone (cloning would run the page's custom element
// constructors), no attributes set.
(function read(visibleOnly, maxLength) {
  const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input',
    'link', 'meta', 'source', 'track', 'wbr']);
  const SKIP = new Set(['script', 'style', 'template', 'noscript']);
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const escAttr = (s) => esc(s).replace(/"/g, '&quot;');
  const out = [];
  let length = 0;
  let truncated = false;
  const put = (...parts) => {
    for (const s of parts) {
      if (truncated) {
        return;
      }
      if (s.length > maxLength - length) {
        out.push(s.slice(0, maxLength - length));
        truncated = true;
        return;
      }
      length += s.length;
      out.push(s);
    }
  };
  // shown reports whether el is rendered; elements with display: contents
  // have no box of their own but their children do.
  const shown = (el) => el.checkVisibility({ visibilityProperty: true }) ||
    getComputedStyle(el).display === 'contents';
  // element writes el; trusted is set inside <head> (never rendered, but
  // the title is there) and inside <details> (a closed one's content is
  // not rendered, yet it is the page's text).
  const element = (el, trusted) => {
    const name = el.localName;
    if (SKIP.has(name)) {
      return;
    }
    if (visibleOnly && !trusted && name !== 'head' && name !== 'html' && !shown(el)) {
      return;
    }
    put('<', name);
    for (const a of el.attributes) {
      put(' ', a.name, '="', escAttr(a.value), '"');
    }
    put('>');
    if (VOID.has(name)) {
      return;
    }
    children(el, trusted || name === 'head' || name === 'details');
    put('</', name, '>');
  };
  const children = (node, trusted) => {
    for (let c = node.firstChild; c && !truncated; c = c.nextSibling) {
      if (c.nodeType === Node.ELEMENT_NODE) {
        element(c, trusted);
      } else if (c.nodeType === Node.TEXT_NODE) {
        put(esc(c.data));
      }
    }
  };
  const root = document.documentElement;
  if (root) {
    element(root, false);
  }
  // The title is cut as Chrome cuts tab titles (4096): a page could set one
  // of hundreds of MB and make the reply too large, like the HTML above.
  return { url: location.href, title: document.title.slice(0, 4096), html: out.join(''), truncated };
})
