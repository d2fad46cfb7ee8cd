package textclip

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func jsonSize(t *testing.T, s string) int {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return len(b) - 2
}

func TestJSONLenMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "abc", "\u0001\u0002", `"\`, "\n\r\t", "<a&b>", "\u2028x\u2029", "é€😀", "a\xffb\xc3", strings.Repeat("\x1b[2J", 10)} {
		require.Equal(t, jsonSize(t, s), JSONLen(s), "%q", s)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"700 KB id", strings.Repeat("a", 700<<10)},
		{"400 KB of U+0001", strings.Repeat("\u0001", 400<<10)},
		{"multibyte", strings.Repeat("€😀", 1000)},
		{"invalid UTF-8", strings.Repeat("\xff", 5000)},
		{"HTML", strings.Repeat("<&>", 2000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, max := range []int{ValueMax, MessageMax} {
				out := Clip(tc.in, max)
				require.LessOrEqual(t, jsonSize(t, out), max)
				require.True(t, utf8.ValidString(out))
				require.Contains(t, out, "[clipped, ")
				require.Greater(t, len(out), max/12, "kept a useful prefix")
			}
		})
	}
	require.Equal(t, "short", Message("short"))
	require.Equal(t, "a\uFFFDb", Value("a\xffb"), "invalid UTF-8 replaced even when short")
	long := strings.Repeat("x", 3000)
	require.Equal(t, long[:ValueMax-len("…[clipped, 3000 bytes]")]+"…[clipped, 3000 bytes]", Value(long))
	require.False(t, Over(strings.Repeat("x", ValueMax), ValueMax))
	require.True(t, Over(strings.Repeat("x", ValueMax+1), ValueMax))
}

func TestQuoteIsBounded(t *testing.T) {
	q := Quote(strings.Repeat("\u0001", 100000))
	require.Less(t, jsonSize(t, q), 4*ValueMax)
	require.True(t, strings.HasPrefix(q, `"\x01`))
}

func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é €":            "plain text, é €",
		"\x1b[2J\x1b]0;pwned\x07":    `\x1b[2J\x1b]0;pwned\a`,
		"\x1b]8;;http://x\x1b\\link": `\x1b]8;;http://x\x1b\link`,
		"a\tb\nc\r":                  `a\tb\nc\r`,
		"c1 \u009b31m":               `c1 \u009b31m`,
		"del\x7f":                    `del\x7f`,
		"bidi \u202egnp.exe":         `bidi \u202egnp.exe`,
		"bad \xff\xfe utf8":          `bad \xff\xfe utf8`,
	} {
		require.Equal(t, want, Terminal(in), "%q", in)
	}
}

func TestLine(t *testing.T) {
	require.Equal(t, "bad  request", Line(" bad\r\nrequest\x1b "))
	require.LessOrEqual(t, jsonSize(t, Line(strings.Repeat("<x>", 10000))), ValueMax)
}
