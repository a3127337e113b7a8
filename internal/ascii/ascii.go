// Package ascii folds ASCII case for protocol words (URL schemes, HTTP
// header names and values, CDP permission names). It folds only A-Z:
// strings.EqualFold and strings.ToLower also fold Unicode, so the long s
// (U+017F) or the Kelvin sign (U+212A) would match words that Chrome, which
// folds ASCII only, reads differently.
package ascii

// ToLower returns c in lower case if it is an ASCII capital letter.
func ToLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// EqualFold reports whether a and b are equal ignoring ASCII case.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if ToLower(a[i]) != ToLower(b[i]) {
			return false
		}
	}
	return true
}
