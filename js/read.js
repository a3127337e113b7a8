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
//
// It also writes what only the renderer knows, for the extractor: on every
// rendered element that is not inline, data-cdpguard-box="x,y,w,h" (its
// box in document pixels) and data-cdpguard-fs (its font size in px).
// The page's own data-cdpguard-* attributes are left out, so a page cannot
// forge them. With visibleOnly, what a reader cannot see is left out too:
// transparent elements, boxes wholly above or left of the document, and
// visually hidden (1-pixel, clipped) screen-reader text.
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
  const shown = (el) => el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) ||
    getComputedStyle(el).display === 'contents';
  const MARK = 'data-cdpguard-';
  // layout returns the renderer's attributes for el, or null when el is
  // rendered where no reader sees it.
  const layout = (el) => {
    const style = getComputedStyle(el);
    if (style.display === 'contents') {
      return '';
    }
    const r = el.getBoundingClientRect();
    const x = r.left + scrollX;
    const y = r.top + scrollY;
    if (r.width > 0 && r.height > 0 && (x + r.width <= 0 || y + r.height <= 0)) {
      return null; // off the page (left: -9999px)
    }
    if (r.width <= 1 && r.height <= 1 && style.overflow !== 'visible' && style.position === 'absolute') {
      return null; // visually hidden text for screen readers
    }
    if (style.display === 'inline') {
      return '';
    }
    return ' ' + MARK + 'box="' + Math.round(x) + ',' + Math.round(y) + ',' + Math.round(r.width) + ',' +
      Math.round(r.height) + '" ' + MARK + 'fs="' + (parseFloat(style.fontSize) || 0) + '"';
  };
  // element writes el; trusted is set inside <head> (never rendered, but
  // the title is there) and inside <details> (a closed one's content is
  // not rendered, yet it is the page's text).
  const element = (el, trusted) => {
    const name = el.localName;
    if (SKIP.has(name)) {
      return;
    }
    let box = '';
    if (!trusted && name !== 'head' && name !== 'html') {
      if (visibleOnly && !shown(el)) {
        return;
      }
      box = layout(el);
      if (box === null) {
        if (visibleOnly) {
          return;
        }
        box = '';
      }
    }
    put('<', name);
    for (const a of el.attributes) {
      if (!a.name.startsWith(MARK)) {
        put(' ', a.name, '="', escAttr(a.value), '"');
      }
    }
    put(box, '>');
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
