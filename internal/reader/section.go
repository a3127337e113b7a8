package reader

import (
	"fmt"
	"strings"
)

// DefaultMaxChars is the section size when the caller names none.
const DefaultMaxChars = 30000

// Section is one part of a page's text. Offsets count Unicode code points;
// concatenating the sections from offset 0 along NextOffset gives the whole
// text back exactly.
type Section struct {
	Text       string
	Offset     int
	NextOffset int // 0 when this section ends the text
	TotalChars int
}

// Cut returns the section of text that starts at offset and holds at most
// maxChars code points (DefaultMaxChars when maxChars is 0). It ends at a
// line break, else a space, in the second half of the window when there is
// one, so that a section rarely splits a word.
func Cut(text string, offset, maxChars int) (Section, error) {
	if maxChars == 0 {
		maxChars = DefaultMaxChars
	}
	if offset < 0 || maxChars < 0 {
		return Section{}, fmt.Errorf("offset and maxChars must not be negative (offset %d, maxChars %d)", offset, maxChars)
	}
	runes := []rune(text)
	total := len(runes)
	if offset > total {
		return Section{}, fmt.Errorf("offset %d is past the end of the text (totalChars %d)", offset, total)
	}
	end := min(offset+maxChars, total)
	if end < total {
		window := string(runes[offset+maxChars/2 : end])
		if i := strings.LastIndexByte(window, '\n'); i >= 0 {
			end = offset + maxChars/2 + len([]rune(window[:i+1]))
		} else if i := strings.LastIndexByte(window, ' '); i >= 0 {
			end = offset + maxChars/2 + len([]rune(window[:i+1]))
		}
	}
	s := Section{Text: string(runes[offset:end]), Offset: offset, TotalChars: total}
	if end < total {
		s.NextOffset = end
	}
	return s, nil
}
