// Package clip bounds a string that the guard quotes back: in a CDP
// refusal, a WebSocket close reason (at most 123 bytes, RFC 6455 section
// 5.5.1) or an error. A quoted string comes from an agent or a page, so its
// length is theirs; it is cut only between UTF-8 characters, because a
// close reason must be valid UTF-8 and a refusal is read by people.
package clip

import "unicode/utf8"

// Max is the length, in bytes, a quoted string is cut to: it fits a close
// frame's reason with room to spare.
const Max = 120

// String returns s cut to at most Max bytes, at the last UTF-8 character
// boundary at or before Max.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	i := Max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
