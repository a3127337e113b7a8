// Package js holds cdpguard's in-page scripts, embedded: each runs in an
// isolated world the guard creates, never in the page's own world.
package js

import _ "embed"

// Read is a function declaration, read(visibleOnly), returning {url,
// title, html}: the rendered DOM of a page, for the reader
// (internal/reader).
//
//go:embed read.js
var Read string

// ReadyState is an expression: the document's readyState, which the reader
// polls until the page has loaded.
//
//go:embed ready.js
var ReadyState string
