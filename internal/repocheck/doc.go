// Package repocheck holds the repository's checks on itself, as tests that
// read the source: decisions by CDP method name only in the firewall and
// event tables (and at most a budget of them elsewhere), a Layout table in
// the README that names every folder and agrees with each package's doc
// comment, no comment or Markdown doc that names a file that does not
// exist, and the figures later work ratchets (function fields in
// dependency structs, maps keyed by plain string ids). It has no code of
// its own: a rule that reads the whole module lives here rather than in
// one package's tests, which see only that package.
package repocheck
