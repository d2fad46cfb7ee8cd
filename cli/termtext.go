package cli

import (
	"strings"
	"unicode/utf8"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Text that came from a platform, a destination or a message (order ids,
// slice ids, error texts, pause reasons, states that quote them) is
// untrusted: ESC, OSC and other control sequences in it would act on the
// operator's terminal. Every table and text line prints such a string
// through term, or clipText, which calls it; JSON output escapes by
// itself.

// term escapes s for a terminal (internal/textclip.Terminal): control
// characters, bidirectional overrides and invalid UTF-8 as Go escapes.
func term(s string) string { return textclip.Terminal(s) }

// clipText is s on one line for a table column of n bytes: newlines as
// spaces, escaped for the terminal, cut on a rune boundary with "...".
func clipText(s string, n int) string {
	s = term(strings.ReplaceAll(s, "\n", " "))
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
