package textclip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sizes, in bytes of the JSON-encoded text (see the package doc).
const (
	// ValueMax bounds one untrusted value quoted inside an error.
	ValueMax = 512
	// MessageMax bounds a whole untrusted error or status text.
	MessageMax = 2048
)

// Value clips one untrusted value (an ID, a total, a field name) to ValueMax.
func Value(s string) string { return Clip(s, ValueMax) }

// Message clips a whole error or status text to MessageMax.
func Message(s string) string { return Clip(s, MessageMax) }

// Line is a platform's own message (an error body, a GraphQL error) for
// one line of an error: control characters become spaces, the ends are
// trimmed, and the rest is clipped to ValueMax.
func Line(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	return Value(strings.TrimSpace(s))
}

// Quote is %q of Value(s): the value clipped, then quoted with Go escapes,
// for error texts that show a value as it was sent.
func Quote(s string) string { return strconv.Quote(Value(s)) }

// Over reports whether s is longer than max once JSON-encoded, that is
// whether Clip(s, max) would change more than invalid UTF-8.
func Over(s string, max int) bool {
	if len(s) <= max/6 {
		return false // even all six-byte escapes fit
	}
	return JSONLen(s) > max
}

// JSONLen is the size of s as encoding/json writes it inside a string,
// without the quotes: escapes for control characters, quotes, backslashes,
// <, >, & (HTML-safe escaping), U+2028 and U+2029, and U+FFFD for each
// invalid byte.
func JSONLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		w, size := runeJSONLen(s[i:])
		n += w
		i += size
	}
	return n
}

// runeJSONLen is the encoded size of the first rune of s and its size in s.
func runeJSONLen(s string) (encoded, size int) {
	c := s[0]
	if c < utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			return 2, 1
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			return 6, 1
		}
		return 1, 1
	}
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size == 1:
		return 6, 1 // \ufffd
	case r == '\u2028' || r == '\u2029':
		return 6, size
	}
	return size, size
}

// Clip returns s, with invalid UTF-8 replaced by U+FFFD, cut on a rune
// boundary so that its JSON-encoded size, marker included, is at most max
// bytes. A cut text ends in "…[clipped, N bytes]" with N the original
// length in bytes.
func Clip(s string, max int) string {
	if !Over(s, max) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	marker := "…[clipped, " + strconv.Itoa(len(s)) + " bytes]"
	budget := max - len(marker)
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		w, size := runeJSONLen(s[i:])
		if n+w > budget {
			break
		}
		n += w
		if r, _ := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String() + marker
}

// Terminal escapes s for a terminal: C0 and C1 control characters, DEL,
// bidirectional overrides and isolates, and invalid UTF-8 bytes are
// written as Go escapes (\x1b, \u202e, \xff); a backslash stays as it is.
// Tabs and newlines are escaped too, since they would break a table.
func Terminal(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case escaped(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b' or '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || escaped(r) {
			return true
		}
		i += size
	}
	return false
}

// escaped says which runes a terminal must not receive raw.
func escaped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f: // bidi
		return true
	}
	return false
}
