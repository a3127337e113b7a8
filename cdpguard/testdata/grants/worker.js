// A dedicated worker for cdpguard/grants_test.go: fetches the URL it is
// sent and posts back "status <n>" or "error <message>".
onmessage = async (e) => {
  try {
    const r = await fetch(e.data, { cache: 'no-store' });
    postMessage('status ' + r.status);
  } catch (err) {
    postMessage('error ' + err.message);
  }
};
