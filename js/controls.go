package js

import _ "embed"

// Controls is a script the guard injects into its hidden controls world of
// every page (internal/controls): the badge, its panel and, on the
// explanation page of a blocked navigation, the "Allow <host>" button.
//
//go:embed controls.js
var Controls string

// ControlsUpdate is a function declaration, update(state), that the guard
// calls in the controls world to push what the badge shows.
//
//go:embed controls_update.js
var ControlsUpdate string
