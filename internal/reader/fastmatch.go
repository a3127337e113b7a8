package reader

import (
	"strings"
	"unicode"
)

// The gates below are exact pre-checks in front of the (?i) line regexps
// (shortChrome, label, sourceLine, contactLine, boilerText, postAsideText,
// seeAlso in widget.go,
// dateWords, urlNote): each is a necessary condition for a match, so a line
// it turns away is one the regexp would not match, and every other line
// still goes to the regexp. They exist because the reader runs these
// regexps on every short line and block of a page, where Go's backtracker
// with case folding cost ~2.5 µs a character (16,000 short paragraphs:
// 3.5 s an Extract). FuzzFastPaths and TestFastPaths compare each gated
// rule with its plain regexp.
//
// Case: outside ASCII, (?i) folds only U+017F (ſ) to s and U+212A (K, the
// Kelvin sign) to k (unicode.SimpleFold); a line holding either goes to
// the regexp ungated, and every other line is compared lower-cased in
// ASCII only.

// foldRisk reports whether t holds a non-ASCII rune that (?i) matches to
// an ASCII letter.
func foldRisk(t string) bool {
	return strings.Contains(t, "\u017f") || strings.Contains(t, "\u212a")
}

// lowerASCII lower-cases the ASCII letters of t and leaves the rest.
func lowerASCII(t string) string {
	for i := 0; i < len(t); i++ {
		if c := t[i]; 'A' <= c && c <= 'Z' {
			b := []byte(t)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return t
}

// hasAnyPrefix reports whether s starts with one of prefixes.
func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// containsAny reports whether s holds one of subs.
func containsAny(s string, subs []string) bool {
	for _, p := range subs {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// noLetter reports whether t holds no letter (shortChrome's ^[^\pL]*$).
func noLetter(t string) bool {
	return strings.IndexFunc(t, unicode.IsLetter) < 0
}

// What a match of each rule must start with or contain, lower-cased.
var (
	shortChromeStarts = []string{"by", "from", "posted", "published", "updated", "last updated", "written by", "article from", "advertisement", "story tools", "send this article", "printer", "email ", "previous page", "next page"}
	shortChromeHolds  = []string{"photo", "pictured", "/reuters", "/ap", "getty images", "seen here", "click to enlarge", "view larger image"}
	labelStarts       = []string{"sign in", "log in", "sign up", "comment", "close", "caption", "advert", "latest", "on the net", "don", "font size", "text size", "staff and agencies", "share", "print", "email", "e-mail", "more", "related", "menu", "media playback", "want more?", "skip to ", "learn more", "read more", "the associated press", "associated press", "you may also like"}
	contactHolds      = []string{"writer", "@", "photo", "by", "the full article contains", "contributed to this report"}
	boilerTextHolds   = []string{"subscribe ", "newsletter", "sign up ", "follow ", "all rights reserved", "click here", "share this", "have a tip", "get the latest", "read more", "related:", "©", "copyright"}
	postAsideHolds    = []string{"follow any responses", "leave a ", "trackback", "rss 2.0", "view my complete profile"}
)

// sourceNameMax is the longest agency name sourceLine takes ("agencies").
const sourceNameMax = 8

// line is a line of text with its ASCII lower-cased form, made once for
// the several rules tried on it.
type line struct {
	t, lt string
	risk  bool // foldRisk(t): no gate applies
}

// newLine lower-cases t once for the rules tried on it.
func newLine(t string) line {
	return line{t: t, lt: lowerASCII(t), risk: foldRisk(t)}
}

// shortChrome is shortChrome.MatchString, gated: a match starts with one
// of its anchored words, holds one of its others, or has no letter.
func (l line) shortChrome() bool {
	if !l.risk && !hasAnyPrefix(l.lt, shortChromeStarts) && !containsAny(l.lt, shortChromeHolds) && !noLetter(l.t) {
		return false
	}
	return shortChrome.MatchString(l.t)
}

// label is label.MatchString, gated: a match starts with one of its words
// or a digit.
func (l line) label() bool {
	if !l.risk && !hasAnyPrefix(l.lt, labelStarts) && (l.lt == "" || l.lt[0] < '0' || l.lt[0] > '9') {
		return false
	}
	return label.MatchString(l.t)
}

// sourceLine is sourceLine.MatchString, gated: a match starts with
// "source" or is an agency name in brackets and spaces.
func (l line) sourceLine() bool {
	if !l.risk && !strings.HasPrefix(l.lt, "source") && len(strings.Trim(l.lt, "([)] \t\n\f\r")) > sourceNameMax {
		return false
	}
	return sourceLine.MatchString(l.t)
}

// contactLine is contactLine.MatchString, gated on the words every
// match holds.
func (l line) contactLine() bool {
	if !l.risk && !containsAny(l.lt, contactHolds) {
		return false
	}
	return contactLine.MatchString(l.t)
}

// boilerText is boilerText.MatchString, gated on the words every match
// holds.
func (l line) boilerText() bool {
	if !l.risk && !containsAny(l.lt, boilerTextHolds) {
		return false
	}
	return boilerText.MatchString(l.t)
}

// isPostAsideText is postAsideText.MatchString(t), gated.
func isPostAsideText(t string) bool {
	if !foldRisk(t) && !containsAny(lowerASCII(t), postAsideHolds) {
		return false
	}
	return postAsideText.MatchString(t)
}

// isBoilerText is boilerText.MatchString(t), gated.
func isBoilerText(t string) bool { return newLine(t).boilerText() }

// dropURLNotes removes urlNote's " <url>" annotations from l: every match
// holds "<http".
func dropURLNotes(l string) string {
	if !strings.Contains(l, "<http") {
		return l
	}
	return urlNote.ReplaceAllString(l, "")
}

// dateStems are the first three letters of the month and weekday words
// dateWords takes with any ending; dateWordsWhole the words it takes
// whole.
var (
	dateStems      = map[string]bool{"jan": true, "feb": true, "mar": true, "apr": true, "may": true, "jun": true, "jul": true, "aug": true, "sep": true, "oct": true, "nov": true, "dec": true, "mon": true, "tue": true, "wed": true, "thu": true, "fri": true, "sat": true, "sun": true}
	dateWordsWhole = map[string]bool{"am": true, "pm": true, "gmt": true, "utc": true, "est": true, "edt": true, "cst": true, "cdt": true, "mst": true, "mdt": true, "pst": true, "pdt": true, "bst": true, "ist": true, "aest": true, "aedt": true, "posted": true, "updated": true, "published": true, "last": true, "on": true, "at": true, "ago": true, "minute": true, "minutes": true, "hour": true, "hours": true, "day": true, "days": true}
)

// keepsWord reports whether t (lower-cased in ASCII, no foldRisk) has a
// run of ASCII letters that dateWords cannot remove, so that dateOnly is
// false. A match that covers a run's first letter starts there: the rune
// before is not an ASCII letter, [a-z] under (?i) takes no other rune
// (foldRisk), and only letters precede it within a match. Starting there
// it takes the run whole only with a date stem (then [a-z]* runs to the
// run's end) or as a whole word (its closing \b cannot fall inside a run).
func keepsWord(lt string) bool {
	for i := 0; i < len(lt); {
		if c := lt[i]; c < 'a' || c > 'z' {
			i++
			continue
		}
		j := i
		for j < len(lt) && 'a' <= lt[j] && lt[j] <= 'z' {
			j++
		}
		w := lt[i:j]
		if !(len(w) >= 3 && dateStems[w[:3]]) && !dateWordsWhole[w] {
			return true
		}
		i = j
	}
	return false
}
