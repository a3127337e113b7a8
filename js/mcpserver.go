package js

import _ "embed" // the in-page scripts of the MCP server's tools

// MCPPageText is an expression giving {url, title, text} of the page's
// rendered text (browser_wait_for).
//
//go:embed mcp_page_text.js
var MCPPageText string

// MCPActionable is a function called on an element: {visible, enabled,
// gone}, checked before an input event is sent at it.
//
//go:embed mcp_actionable.js
var MCPActionable string

// MCPClear is a function called on an editable element: it focuses it and
// selects its content so that typing replaces it.
//
//go:embed mcp_clear.js
var MCPClear string

// MCPSelect is a function called on a <select> with a list of values or
// labels: {picked} or {error}.
//
//go:embed mcp_select.js
var MCPSelect string

// MCPLoaded is an expression: whether the document has loaded a page
// other than about:blank (a new tab's first page).
//
//go:embed mcp_loaded.js
var MCPLoaded string

// MCPEditable is a function called on an element: whether it takes text
// (browser_type refuses others without clicking them).
//
//go:embed mcp_editable.js
var MCPEditable string

// MCPChecked is a function called on a checkbox or radio: whether it is
// checked (browser_fill_form clicks it only to change that).
//
//go:embed mcp_checked.js
var MCPChecked string

// MCPSlider is a function called on an <input type=range> with a value:
// {value} as it holds it, or {error} (browser_fill_form's slider field).
//
//go:embed mcp_slider.js
var MCPSlider string
