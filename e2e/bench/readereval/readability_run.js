// readability_run.js runs Mozilla Readability (loaded into the page just
// before, from e2e/node_modules, by the bench only) on a clone of the
// rendered document and returns the article's text.
(() => {
  const a = new Readability(document.cloneNode(true)).parse();
  return a ? a.textContent : '';
})()
