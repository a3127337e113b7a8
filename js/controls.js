// cdpguard's in-page controls. The guard injects this script into a hidden
// isolated world of every page (Page.addScriptToEvaluateOnNewDocument with a
// random world name): the page's own scripts cannot reach its variables,
// its prototypes or its closed shadow root. It only draws what the guard
// pushes (update, via js/controls_update.js) and reports a human's click on
// the "Allow" button through the guard's binding, with what only this world
// can see: whether the click was a trusted event during a user activation.
(() => {
  if (window !== window.top || globalThis.cdpguardControls) return;
  let state = { blocked: 0, recent: [], origins: [], explain: null, note: '', binding: '' };
  let host = null, root = null, badge = null, panel = null, open = false;
  let shownAt = 0, sent = false, lastRefusal = -Infinity, visible = null, allowBtn = null, allowFor = '';
  const ARM_MS = 600;
  // Something other than this script may change the controls' DOM (an
  // agent reaches a closed shadow root with DOM.* and pierce, and the host
  // element is the page's): then they are drawn afresh, with a new button
  // that must arm again. The observer's records of this script's own
  // changes are taken (dropped) right after each change, so only foreign
  // ones reach its callback.
  let mo = null, hostStyle = '';
  const mine = () => { if (mo) mo.takeRecords(); };
  // The button is armed only once it has been in view for ARM_MS: the clock
  // restarts when the tab comes to the front or its window gets the focus
  // (an agent can prepare the page in a background tab or behind another
  // window and bring it up under the human's pointer; a human whose click
  // raised the window clicks again).
  const rearm = () => { shownAt = performance.now(); };
  // Where a button is (its box in the viewport, the window on the screen):
  // a move can put it under a pointer aimed elsewhere, so it rearms too.
  const where = (b) => {
    const r = b.getBoundingClientRect();
    return [r.left, r.top, r.width, r.height, window.screenX, window.screenY].map(Math.round).join(',');
  };
  document.addEventListener('visibilitychange', rearm);
  window.addEventListener('focus', rearm);

  const el = (tag, css, text) => {
    const e = document.createElement(tag);
    Object.assign(e.style, css);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // The host lives in the top layer (a manual popover): there no
  // ancestor's transform, animation or scroll moves it, so the page cannot
  // slide the button under the human's pointer with a change no frame of
  // its main thread draws (a compositor animation of the root's transform
  // while the main thread is blocked: e2e RedTeamControls/
  // move-by-animation). A page that takes it out disarms the button.
  // Taken out, it goes back before the next frame is drawn: beforetoggle
  // fires inside the page's hidePopover() call, and this listener, added at
  // the document's start on the window's capture path, runs before any the
  // page adds (a page stopped the toggle events that reached the host:
  // e2e RedTeamControls/move-out-of-top-layer); the put-back waits for the
  // end of that task (a popover cannot be shown while it hides). Removing
  // the attribute hides it without events: the mutation observer puts it
  // back.
  window.addEventListener('beforetoggle', (e) => {
    if (host && e.target === host && e.newState === 'closed') { rearm(); queueMicrotask(toTop); }
  }, true);
  const toTop = () => {
    try {
      if (host.getAttribute('popover') !== 'manual') host.setAttribute('popover', 'manual');
      if (host.isConnected && !host.matches(':popover-open')) host.showPopover();
    } catch (_) { /* not in the top layer: the place observer still judges */ }
    mine();
  };

  function build() {
    if (host) {
      if (!host.isConnected && document.documentElement) { document.documentElement.appendChild(host); rearm(); toTop(); }
      return true;
    }
    if (!document.documentElement) return false;
    host = document.createElement('cdpguard-controls');
    host.setAttribute('aria-hidden', 'true');
    const s = host.style;
    s.setProperty('all', 'initial', 'important');
    s.setProperty('position', 'fixed', 'important');
    s.setProperty('right', '8px', 'important');
    s.setProperty('bottom', '8px', 'important');
    s.setProperty('z-index', '2147483647', 'important');
    s.setProperty('display', 'block', 'important');
    s.setProperty('contain', 'layout style', 'important');
    root = host.attachShadow({ mode: 'closed' });
    panel = el('div', {
      display: 'none', maxWidth: '360px', maxHeight: '60vh', overflow: 'auto', marginBottom: '6px',
      padding: '10px 12px', background: '#fff', color: '#222', border: '1px solid #888', borderRadius: '8px',
      font: '13px/1.4 system-ui, sans-serif', boxShadow: '0 2px 8px rgba(0,0,0,.3)',
    });
    badge = el('div', {
      marginLeft: 'auto', width: 'max-content', padding: '4px 10px', borderRadius: '12px', cursor: 'pointer',
      background: '#1d4ed8', color: '#fff', font: 'bold 12px/1.4 system-ui, sans-serif', userSelect: 'none',
      boxShadow: '0 1px 4px rgba(0,0,0,.4)',
    });
    badge.addEventListener('click', (e) => {
      if (!e.isTrusted) return;
      open = !open;
      render();
    });
    root.append(panel, badge);
    document.documentElement.appendChild(host);
    toTop();
    render();
    hostStyle = host.getAttribute('style');
    // A foreign change disarms the button at once; the redraw runs at most
    // every 100 ms, so a page that keeps undoing it cannot make the two
    // observers loop.
    let redrawAt = -Infinity, redrawTimer = 0;
    const redraw = () => {
      redrawTimer = 0;
      redrawAt = performance.now();
      for (const a of host.getAttributeNames()) if (a !== 'style' && a !== 'aria-hidden' && a !== 'popover') host.removeAttribute(a);
      host.setAttribute('style', hostStyle);
      host.setAttribute('aria-hidden', 'true');
      toTop();
      allowFor = '';
      render();
    };
    mo = new MutationObserver((rs) => {
      if (!rs.length) return;
      rearm();
      if (!host.matches(':popover-open')) toTop();
      if (!redrawTimer) redrawTimer = setTimeout(redraw, Math.max(0, redrawAt + 100 - performance.now()));
    });
    mo.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
    mo.observe(host, { attributes: true });
    return true;
  }

  function section(title, lines) {
    const box = el('div', { marginTop: '6px' });
    box.append(el('div', { fontWeight: 'bold' }, title));
    for (const l of lines) box.append(el('div', { overflowWrap: 'anywhere' }, l));
    return box;
  }

  function allowButton(host) {
    const b = el('button', {
      display: 'block', marginTop: '8px', padding: '6px 10px', font: 'bold 13px system-ui, sans-serif',
      background: '#b91c1c', color: '#fff', border: '0', borderRadius: '6px', cursor: 'pointer',
    }, 'Allow ' + host + ' for this session');
    b.disabled = true;
    shownAt = performance.now();
    sent = false;
    setTimeout(() => { b.disabled = false; mine(); }, ARM_MS);
    // Only the button on show counts: one drawn afresh retires this one.
    let at = where(b);
    // Where the button was drawn. A timer cannot tell: a page that blocks
    // its main thread shows the button elsewhere for as long as it blocks,
    // and puts it back under the pointer in the task that ends the block,
    // before the queued click is hit-tested (e2e RedTeamControls/
    // move-while-blocked). An observer whose root is a small square at the
    // button's centre is told, for each frame the browser draws, whether the
    // button covers that square; the click handler takes the records not yet
    // delivered. Until the first record the button is not placed.
    let placed = false, place = null;
    const onPlace = (es) => {
      for (const x of es) {
        if (x.isIntersecting && !placed) shownAt = performance.now();
        placed = x.isIntersecting;
      }
    };
    const watchPlace = () => {
      if (place) place.disconnect();
      place = null;
      placed = false;
      const r = b.getBoundingClientRect();
      const W = document.documentElement.clientWidth, H = document.documentElement.clientHeight;
      const cx = Math.round(r.left + r.width / 2), cy = Math.round(r.top + r.height / 2);
      try {
        place = new IntersectionObserver((es) => {
          if (b !== allowBtn) return place && place.disconnect();
          onPlace(es);
        }, { rootMargin: `${1 - cy}px ${cx + 1 - W}px ${cy + 1 - H}px ${1 - cx}px`, threshold: 0 });
        place.observe(b);
      } catch (_) { place = null; } // never placed: a click is not a decision
    };
    watchPlace();
    const iv = setInterval(() => {
      if (b !== allowBtn) { clearInterval(iv); return place && place.disconnect(); }
      const w = where(b);
      if (w !== at) { at = w; rearm(); watchPlace(); }
    }, 100);
    // Intersection Observer v2: is the button shown, uncovered and opaque?
    // A click on a button something else hides is not a decision.
    let io = null;
    const onVisible = (es) => {
      // The arming clock restarts each time it comes into view, from when
      // this world learns it (not the frame's time: the later, the safer).
      for (const x of es) {
        if (x.isVisible && visible !== true) shownAt = performance.now();
        visible = x.isVisible;
      }
    };
    try {
      io = new IntersectionObserver((es) => {
        if (b !== allowBtn) return io.disconnect();
        onVisible(es);
      },
        { trackVisibility: true, delay: 100 });
      io.observe(b);
    } catch (_) { visible = null; }
    b.addEventListener('click', (e) => {
      // What was drawn up to the click, not yet delivered to the callbacks.
      if (place) onPlace(place.takeRecords());
      if (io) onVisible(io.takeRecords());
      const ua = navigator.userActivation;
      const payload = {
        action: 'allow',
        host,
        label: b.textContent,
        trusted: e.isTrusted === true,
        active: !!(ua && ua.isActive),
        // The click's own time, not now: a debugger can pause this handler
        // until any "now" is late enough.
        armed: document.visibilityState === 'visible' && placed && where(b) === at && e.timeStamp - shownAt >= ARM_MS,
        visible,
        // How long the click waited for this handler (a page that blocks its
        // main thread holds it back): the guard measures its quiet window
        // to the click, not to this report.
        waited: Math.max(0, performance.now() - e.timeStamp),
        // A click dated after this handler began would pass the arming and
        // the quiet window at a time that has not come: the guard refuses it.
        timed: e.timeStamp <= performance.now(),
      };
      // When the report left, by the wall clock (this world's Date, which
      // the page cannot replace): the guard counts the report's way to it
      // as time before its arrival, not after the click.
      payload.sentAt = Date.now();
      const ok = payload.trusted && payload.active && payload.armed && payload.timed;
      const now = performance.now();
      if (sent || (!ok && now - lastRefusal < 1000)) return;
      if (ok) sent = true; else lastRefusal = now;
      const call = globalThis[state.binding];
      if (typeof call === 'function') call(JSON.stringify(payload));
      if (ok) { b.disabled = true; b.textContent = 'Asking cdpguard…'; mine(); }
    });
    return b;
  }

  function render() {
    if (!badge) return;
    const n = state.blocked | 0;
    badge.textContent = 'cdpguard active · ' + n + ' blocked';
    if (state.note) badge.append(el('div', { maxWidth: '320px', fontWeight: 'normal', overflowWrap: 'anywhere' }, state.note));
    badge.title = 'cdpguard: click for the reachable origins and recent blocks';
    panel.textContent = '';
    const explain = state.explain;
    panel.style.display = (open || explain) ? 'block' : 'none';
    if (!(open || explain)) return mine();
    panel.append(el('div', { fontWeight: 'bold', fontSize: '14px' }, 'cdpguard'));
    if (explain) {
      panel.append(el('div', { marginTop: '4px' }, 'This page tried to open ' + explain.host + ', which is not on the allowlist.'));
      if (explain.granted) panel.append(el('div', { marginTop: '4px' }, explain.host + ' is allowed for this session.'));
      else if (explain.noGrant) panel.append(el('div', { marginTop: '4px' }, 'It cannot be allowed for this session: ' + explain.noGrant + '.'));
      else {
        if (allowFor !== explain.host) { allowFor = explain.host; allowBtn = allowButton(explain.host); }
        panel.append(allowBtn);
      }
    }
    panel.append(section('Reachable origins', state.origins.length ? state.origins : ['none (the allowlist is empty)']));
    panel.append(section('Blocked on this page', state.recent.length
      ? state.recent.map((r) => r.host + ' — ' + r.reason) : ['nothing']));
    mine();
  }

  globalThis.cdpguardControls = {
    update(s) {
      const retry = allowBtn && sent && s.explain && state.explain && s.explain.refused !== state.explain.refused;
      state = s;
      if (retry) { sent = false; allowBtn.disabled = false; allowBtn.textContent = 'Allow ' + allowFor + ' for this session'; }
      if (!build()) document.addEventListener('DOMContentLoaded', build, { once: true });
      render();
      return true;
    },
  };
  if (!build()) document.addEventListener('DOMContentLoaded', build, { once: true });
})();
