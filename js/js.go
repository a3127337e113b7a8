// Package js holds cdpguard's in-page scripts, embedded. The reader's (this
// file) run in an isolated world the guard creates and hides from agents;
// the MCP tools' (mcpserver.go) run where any agent's scripts run, in the
// page's main world, through the MCP server's agent connection.
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

// Settle is a function declaration, settle(keepMs, minChars), returning
// {state, now, lastNet, loaded, resources, nodes, text, chars, scripted,
// watched, changes, quietFor}: what the reader polls to tell that a page
// has settled (load done, network quiet, DOM unchanged, text written), with
// a MutationObserver in the reader's world that sees every change of nodes
// and text between looks.
//
//go:embed settle.js
var Settle string
