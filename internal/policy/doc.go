// Package policy is cdpguard's policy language: the one place that decides
// whether a URL or a host may be reached. Every other layer (the Fetch
// interceptor, the egress proxy, `cdpguard check`, GET /policy) asks it, so
// the rules below hold everywhere.
//
// The language is compatible with `@playwright/mcp --allowed-origins`.
// Entries are separated by ';', ',' or new lines; spaces around an entry are
// trimmed and empty entries skipped. Forms:
//
//	example.com              that exact host, any port, schemes http, https, ws, wss
//	example.com:8443         that host on port 8443, any of the four schemes
//	example.com:*            same as example.com (written canonically without ":*")
//	https://example.com      that origin only: https on port 443 (and wss, see below)
//	https://example.com:8443 https (and wss) on port 8443
//	http://example.com:*     http (and ws) on any port
//	*.example.com            any subdomain at any depth, not the apex; combine with
//	                         a scheme and/or port like a plain host
//	127.0.0.1, [::1]:8080    IP literal entries (IPv6 in brackets)
//	*                        alone: allow every host (logged loudly by the caller)
//
// A scheme entry also allows its WebSocket (or HTTP) counterpart: https <->
// wss and http <-> ws. They share default ports and transport security, and a
// page on https://example.com normally opens wss://example.com.
//
// A single trailing "/" is accepted and dropped (people paste origins as
// "https://example.com/"); any other path, a query, a fragment, userinfo, a
// wildcard anywhere but a whole first label, an empty label, a bad port, an
// unknown scheme or an IPv6 literal without brackets is an error naming the
// entry ([EntryError]).
//
// The blocklist uses the same forms and is checked first; "*" in it blocks
// every network URL. Hosts are normalised on both sides by [NormalizeHost]:
// lower case, IDNA to punycode (UTS #46 as the WHATWG URL standard uses it),
// one trailing dot removed, percent-encoding decoded, IP literals canonical,
// IPv4-mapped IPv6 addresses unmapped. Hosts that a browser would read as
// IPv4 in a non-canonical way (0x7f.1, 017700000001, 2130706433, 127.1) are
// refused outright rather than interpreted.
//
// URLs are split the way the WHATWG URL parser splits them (so a browser and
// cdpguard agree on the host): leading and trailing C0 controls and spaces are
// trimmed, tabs and new lines removed, any run of '/' and '\' after a network
// scheme skipped, userinfo (everything up to the last '@' of the authority)
// ignored, and default ports applied (http and ws 80, https and wss 443).
// Schemes about:, data: and blob: never touch the network and are always
// allowed (a blob: URL's inner origin is only a label); every other scheme
// (file:, chrome:, javascript:, ftp: ...) is never allowed.
//
// The zero [Decision] denies, and an empty or nil [Policy] denies every
// network URL. A Policy is immutable after [Parse] and safe for concurrent use.
package policy
