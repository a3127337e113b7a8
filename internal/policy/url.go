package policy

import (
	"strings"

	"github.com/cdpguard/cdpguard/internal/ascii"
)

// splitStatus says how a URL split went.
type splitStatus uint8

const (
	splitOK splitStatus = iota
	// splitMalformed: no scheme, empty host, bad port.
	splitMalformed
	// splitDirty: a space, control character, tab or new line where it
	// matters; the caller cleans the URL as the WHATWG parser does and
	// splits again.
	splitDirty
)

// schemeKind classifies a URL scheme; the network kinds are bits so a rule
// can hold a set of them.
type schemeKind uint8

const (
	schemeHTTP schemeKind = 1 << iota
	schemeHTTPS
	schemeWS
	schemeWSS
	schemeAbout
	schemeData
	schemeBlob
	schemeOther

	schemeNetwork = schemeHTTP | schemeHTTPS | schemeWS | schemeWSS
)

// splitScheme returns the scheme of s (case as written) and what follows its
// colon, without allocating.
func splitScheme(s string) (scheme, rest string, st splitStatus) {
	if s == "" {
		return "", "", splitMalformed
	}
	if s[0] <= ' ' {
		return "", "", splitDirty
	}
	if !isAlpha(s[0]) {
		return "", "", splitMalformed
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c), '0' <= c && c <= '9', c == '+', c == '-', c == '.':
		case c == ':':
			return s[:i], s[i+1:], splitOK
		case c == '\t', c == '\n', c == '\r':
			return "", "", splitDirty
		default:
			return "", "", splitMalformed
		}
	}
	return "", "", splitMalformed
}

// classifyScheme folds ASCII case without allocating.
func classifyScheme(s string) schemeKind {
	switch {
	case ascii.EqualFold(s, "https"):
		return schemeHTTPS
	case ascii.EqualFold(s, "http"):
		return schemeHTTP
	case ascii.EqualFold(s, "wss"):
		return schemeWSS
	case ascii.EqualFold(s, "ws"):
		return schemeWS
	case ascii.EqualFold(s, "about"):
		return schemeAbout
	case ascii.EqualFold(s, "data"):
		return schemeData
	case ascii.EqualFold(s, "blob"):
		return schemeBlob
	}
	return schemeOther
}

// defaultPort is the port a network scheme implies.
func defaultPort(k schemeKind) int {
	if k&(schemeHTTPS|schemeWSS) != 0 {
		return 443
	}
	return 80
}

// splitAuthority reads the host and port after a network scheme's colon the
// way the WHATWG parser does for special schemes: any run of '/' and '\' is
// skipped, the authority ends at '/', '\', '?' or '#', userinfo up to the last
// '@' is ignored, and ':' outside brackets starts the port. port is -1 when
// absent or empty.
func splitAuthority(rest string) (host string, port int, st splitStatus) {
	i := 0
	for i < len(rest) && (rest[i] == '/' || rest[i] == '\\') {
		i++
	}
	start := i
	for ; i < len(rest); i++ {
		c := rest[i]
		if c == '/' || c == '\\' || c == '?' || c == '#' {
			break
		}
		if c == '@' {
			start = i + 1
		} else if c <= ' ' {
			return "", -1, splitDirty
		}
	}
	auth := rest[start:i]
	inBrackets := false
	hostEnd := len(auth)
	for j := 0; j < len(auth); j++ {
		switch auth[j] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				hostEnd = j
				j = len(auth)
			}
		}
	}
	host = auth[:hostEnd]
	if host == "" {
		return "", -1, splitMalformed
	}
	port = -1
	if hostEnd < len(auth) && hostEnd+1 < len(auth) {
		port = 0
		for _, c := range []byte(auth[hostEnd+1:]) {
			if c < '0' || c > '9' {
				return "", -1, splitMalformed
			}
			port = port*10 + int(c-'0')
			if port > 65535 {
				return "", -1, splitMalformed
			}
		}
		if port == 0 {
			return "", -1, splitMalformed
		}
	}
	return host, port, splitOK
}

// cleanURL trims leading and trailing C0 controls and spaces and removes
// every tab and new line, as the WHATWG parser does before parsing.
func cleanURL(s string) string {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
