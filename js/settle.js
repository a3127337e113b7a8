// settle.js is called by cdpguard's reader in its isolated world while it
// waits for a page that renders by script to settle: the load state, the
// network (the resource timing entries, which complete requests add), the
// DOM (element count, text length, and every change a MutationObserver saw)
// and how much readable text the page shows so far. The observer lives in
// the guard's hidden world, so the page cannot see it; it counts changes to
// nodes and text (not attributes, which animations change all the time) and
// disconnects itself at the first change keepMs after the reader's last
// look. It also tells whether the document is inert: no script element (of
// any namespace), no inline event handler, no frame or plugin, no refresh,
// so nothing in it can change its DOM once it has loaded. It reads the
// page; it changes nothing. It is a function declaration:
// settle(keepMs, minChars).
function settle(keepMs, minChars) {
  const now = performance.now();
  let w = globalThis.__cdpguardSettle;
  const watched = !!(w && w.on);
  if (!watched) {
    w = { on: true, count: 0, last: 0, since: now, until: 0, obs: null };
    w.obs = new MutationObserver(() => {
      w.count++;
      w.last = performance.now();
      if (w.last > w.until) {
        w.obs.disconnect();
        w.on = false;
      }
    });
    w.obs.observe(document, { childList: true, characterData: true, subtree: true });
    globalThis.__cdpguardSettle = w;
  }
  w.until = now + keepMs;

  // readable counts the characters of text (not white space) a reader
  // could show, up to minChars: text outside scripts, styles, templates
  // and the page's navigation chrome.
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'NAV', 'HEADER', 'FOOTER', 'ASIDE']);
  const readable = (root) => {
    if (!root) {
      return 0;
    }
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => {
        if (n.nodeType === Node.TEXT_NODE) {
          return NodeFilter.FILTER_ACCEPT;
        }
        return skip.has(n.nodeName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP;
      },
    });
    let n = 0;
    while (n < minChars && walker.nextNode()) {
      const s = walker.currentNode.data;
      for (let i = 0; i < s.length && n < minChars; i++) {
        const c = s.charCodeAt(i);
        if (c > 32 && c !== 160) {
          n++;
        }
      }
    }
    return n;
  };

  const entries = performance.getEntriesByType('resource');
  let lastNet = 0;
  for (const e of entries) {
    lastNet = Math.max(lastNet, e.responseEnd);
  }
  // inert: nothing in the document can write it after its load. An inline
  // handler is an attribute named on…; a script that removed itself is not
  // seen here, which is why the reader takes an inert page at once only
  // when it already shows minChars of readable text. The look at the
  // attributes visits at most inertLimit elements and attributes and stops
  // at the first handler: a page with more is not taken as inert (it waits
  // as any other page), so one look stays bounded: counting every
  // attribute by XPath took 0.26-0.8 s a look on a page of 100k elements
  // with 10 attributes each, where the rest of a look took 2-5 ms; the
  // bounded look takes 20-30 ms there.
  const inertLimit = 20000;
  const inert = () => {
    if (document.querySelector('script, iframe, frame, object, embed, meta[http-equiv="refresh" i]')) {
      return false;
    }
    const all = document.getElementsByTagName('*');
    let seen = 0;
    for (let i = 0; i < all.length; i++) {
      const attrs = all[i].attributes;
      seen += 1 + attrs.length;
      if (seen > inertLimit) {
        return false;
      }
      for (let j = 0; j < attrs.length; j++) {
        if (attrs[j].name.startsWith('on')) {
          return false;
        }
      }
    }
    return true;
  };
  const nav = performance.getEntriesByType('navigation')[0];
  const body = document.body;
  return {
    state: document.readyState,
    now,
    lastNet,
    loaded: nav ? nav.loadEventEnd : 0,
    resources: entries.length,
    nodes: document.getElementsByTagName('*').length,
    text: body ? body.textContent.length : 0,
    chars: readable(body),
    scripted: document.scripts.length > 0,
    inert: inert(),
    watched,
    changes: w.count,
    quietFor: watched ? now - Math.max(w.last, w.since) : 0,
  };
}
