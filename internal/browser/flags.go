package browser

import (
	"os"
	"strings"
)

// guardFlags are the hardening flags every managed browser gets. They are
// merged last, so for a flag of the same name their value wins over both
// the user's and cdpguard's own GuardFlags.
var guardFlags = [...]string{
	"--remote-debugging-pipe",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-quic",
	// WebRTC may send no UDP that does not go through the proxy. Chromium
	// 156 no longer has --force-webrtc-ip-handling-policy (the older spelling):
	// this switch sets the webrtc.ip_handling_policy pref, which browser
	// contexts inherit (docs/decisions/2026-11-30-launch-flags.md; e2e
	// TestSideChannels/webrtc-* saw STUN packets leave without it).
	"--webrtc-ip-handling-policy=disable_non_proxied_udp",
	"--disable-features=ServiceWorkerAutoPreload",
}

// economyFlags switch off browser UI a managed browser never shows: the
// omnibox popup is a WebUI page (chrome://omnibox-popup.top-chrome/) that
// headless Chromium 156 keeps in its own renderer, preloaded at start and
// updated on every navigation; e2e TestLeaks spent a third of its CPU
// there (docs/decisions/2026-12-02-ci-time.md). They are merged first, so
// a user's flag (--enable-features=WebUIOmniboxPopup) overrides them;
// none of them is a security property.
var economyFlags = [...]string{"--disable-features=" + EconomyFeatures}

// EconomyFeatures are the features the economy flags switch off; the bench
// switches them off in the Chromium it compares the guard with, so that
// the ratio is the guard's cost alone.
const EconomyFeatures = "WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,PreloadTopChromeWebUI"

// startURL is the browser's first page: Playwright hangs connecting while the
// first tab is still in an initial navigation, and a blank page loads nothing.
const startURL = "about:blank"

// featureLists pairs each comma-separated feature flag with its opposite.
// Chrome honours only the last occurrence of each, so MergeFlags folds every
// occurrence into one.
var featureLists = map[string]string{
	"disable-features":       "enable-features",
	"enable-features":        "disable-features",
	"disable-blink-features": "enable-blink-features",
	"enable-blink-features":  "disable-blink-features",
}

// forbiddenFlags are user flags Launch refuses, with the reason: each would
// let a page or a local process around cdpguard's single connection or its
// egress proxy.
var forbiddenFlags = map[string]string{
	"remote-debugging-port":        "opens a CDP port; cdpguard uses the pipe",
	"remote-debugging-address":     "opens a CDP port; cdpguard uses the pipe",
	"remote-debugging-socket-name": "opens a CDP socket; cdpguard uses the pipe",
	"remote-debugging-io-pipes":    "changes cdpguard's pipe",
	"remote-allow-origins":         "lets web origins use a CDP port",
	"no-proxy-server":              "bypasses the egress proxy",
	"proxy-pac-url":                "replaces the egress proxy",
	"proxy-auto-detect":            "replaces the egress proxy",
	"proxy-bypass-list":            "bypasses the egress proxy",
	"user-data-dir":                "set LaunchOptions.UserDataDir instead",
}

// flagName returns the switch name of arg without leading dashes or value,
// and whether arg is a switch at all (Chrome treats anything else as a URL
// to open).
func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", false
	}
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	return name, name != ""
}

// featureName returns the feature of one list entry without its field-trial
// suffixes ("Foo:param/1" and "Foo<Trial" are both Foo).
func featureName(entry string) string {
	if i := strings.IndexAny(entry, ":<"); i >= 0 {
		return entry[:i]
	}
	return entry
}

// featureList is one merged --*-features list in first-seen order.
type featureList struct {
	entries []string
}

func (l *featureList) index(feature string) int {
	for i, e := range l.entries {
		if featureName(e) == feature {
			return i
		}
	}
	return -1
}

// add sets entry, replacing an earlier entry for the same feature in place.
func (l *featureList) add(entry string) {
	if i := l.index(featureName(entry)); i >= 0 {
		l.entries[i] = entry
		return
	}
	l.entries = append(l.entries, entry)
}

func (l *featureList) remove(feature string) {
	if i := l.index(feature); i >= 0 {
		l.entries = append(l.entries[:i], l.entries[i+1:]...)
	}
}

// MergeFlags merges Chrome flag lists into one argv, later lists taking
// precedence. Each element is one whole flag; values are never split on
// commas except those of the feature lists below.
//
//   - Every --disable-features= and --enable-features= (and the
//     --*-blink-features= pair) across all lists becomes ONE flag each, at
//     the position of its first occurrence, because Chrome honours only the
//     last. Entries are comma separated and trimmed; a feature is kept once,
//     in first-seen order, with its last spelling ("Foo:p/1" replaces "Foo").
//     A feature named later in the opposite list is removed from this one, so
//     the later word wins; a list left empty (or a bare --disable-features
//     without "=") is dropped.
//   - Any other switch keeps the position of its first occurrence and the
//     value of its last one: Chrome reads one value per switch, and the
//     later list (cdpguard's own) must decide it. "--a" and "-a" are the same.
//   - Arguments that are not switches (URLs) and are not repeated are kept in
//     order; empty strings are dropped.
func MergeFlags(flagLists ...[]string) []string {
	type slot struct {
		arg     string // the flag as given, or "" for a merged feature list
		feature string // name of the merged feature list of this slot
	}
	var slots []slot
	switchAt := map[string]int{}          // switch name -> index in slots
	features := map[string]*featureList{} // feature flag name -> merged list
	seenArg := map[string]bool{}
	for _, list := range flagLists {
		for _, arg := range list {
			if arg == "" {
				continue
			}
			name, isSwitch := flagName(arg)
			if !isSwitch {
				if !seenArg[arg] {
					seenArg[arg] = true
					slots = append(slots, slot{arg: arg})
				}
				continue
			}
			if opposite, ok := featureLists[name]; ok {
				// A bare switch carries no features; passed on, it would
				// empty the list Chrome reads, so it is dropped.
				_, value, _ := strings.Cut(arg, "=")
				mergeFeatures(name, opposite, value, features)
				if _, placed := switchAt[name]; !placed {
					switchAt[name] = len(slots)
					slots = append(slots, slot{feature: name})
				}
				continue
			}
			if i, ok := switchAt[name]; ok {
				slots[i] = slot{arg: arg}
				continue
			}
			switchAt[name] = len(slots)
			slots = append(slots, slot{arg: arg})
		}
	}
	out := make([]string, 0, len(slots))
	for _, s := range slots {
		switch {
		case s.feature == "":
			out = append(out, s.arg)
		case len(features[s.feature].entries) > 0:
			out = append(out, "--"+s.feature+"="+strings.Join(features[s.feature].entries, ","))
		}
	}
	return out
}

// mergeFeatures adds the entries of one feature flag value to the list of
// name and removes them from the opposite list.
func mergeFeatures(name, opposite, value string, features map[string]*featureList) {
	list := features[name]
	if list == nil {
		list = &featureList{}
		features[name] = list
	}
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		list.add(entry)
		if other := features[opposite]; other != nil {
			other.remove(featureName(entry))
		}
	}
}

// CheckFlags refuses user flags that would open a way around cdpguard: a CDP
// port or socket, a proxy bypass or replacement, a second user-data-dir, and
// any argument that is not a switch (Chrome would open it as a start URL
// before cdpguard's request interception is in place). It returns a
// *FlagError for the first such flag. Launch applies it to
// LaunchOptions.Flags; GuardFlags are cdpguard's own and not checked.
func CheckFlags(flags []string) error {
	for _, arg := range flags {
		if arg == "" {
			continue
		}
		name, isSwitch := flagName(arg)
		if !isSwitch {
			return &FlagError{Flag: arg, Reason: "not a switch; Chrome would open it as a page"}
		}
		if reason, bad := forbiddenFlags[name]; bad {
			return &FlagError{Flag: arg, Reason: reason}
		}
	}
	return nil
}

// BuildArgs returns the final argv (without the binary) that Launch runs:
// the economy flags, opts.Flags, opts.GuardFlags, then the hardening flags,
// merged by MergeFlags (so for a repeated switch cdpguard's value wins and
// the user's wins over an economy flag), then
// about:blank as the start URL. --user-data-dir appears only when
// opts.UserDataDir is set (Launch sets it to its temp dir first);
// --no-sandbox only when running as root; --headless and --disable-gpu
// unless opts.Headed.
func BuildArgs(opts LaunchOptions) []string {
	base := append([]string(nil), guardFlags[:]...)
	if opts.UserDataDir != "" {
		base = append(base, "--user-data-dir="+opts.UserDataDir)
	}
	if os.Geteuid() == 0 {
		base = append(base, "--no-sandbox")
	}
	if !opts.Headed {
		base = append(base, "--headless", "--disable-gpu")
	}
	args := MergeFlags(economyFlags[:], opts.Flags, opts.GuardFlags, base)
	// about:blank must be the only start URL and the last argument.
	out := args[:0]
	for _, a := range args {
		if a != startURL {
			out = append(out, a)
		}
	}
	return append(out, startURL)
}
