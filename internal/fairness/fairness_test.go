package fairness_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/internal/fairness"
)

func TestKey(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, tc := range []struct {
		name, in string
		want     string // "" : checked by shape only
	}{
		{"short name is its own key", "shop-eu", "shop-eu"},
		{"63 bytes, the longest platform name, is its own key", strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{"exactly the limit is its own key", strings.Repeat("y", 64), strings.Repeat("y", 64)},
		{"one byte over is clipped and hashed", strings.Repeat("z", 65), ""},
		{"long name", long, ""},
		{"multi-byte characters are not cut in half", strings.Repeat("é", 40), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fairness.Key(tc.in)
			require.LessOrEqual(t, len(got), fairness.MaxKeyLen)
			require.True(t, utf8.ValidString(got), "key %q is not valid UTF-8", got)
			if tc.want != "" {
				require.Equal(t, tc.want, got)
				return
			}
			require.NotEqual(t, tc.in, got)
			require.Contains(t, got, "~")
			prefix, _, _ := strings.Cut(got, "~")
			require.True(t, strings.HasPrefix(tc.in, prefix), "a clipped key keeps the name's first bytes")
			require.Equal(t, got, fairness.Key(tc.in), "the same name always gets the same key")
		})
	}
}

// TestKeyLongNamesSharingAPrefixStayApart: clipping alone would give every
// name with the same first 64 bytes one key, and so one share of the queue.
func TestKeyLongNamesSharingAPrefixStayApart(t *testing.T) {
	prefix := strings.Repeat("merchant-", 8) // 72 bytes
	a, b := fairness.Key(prefix+"shop-a"), fairness.Key(prefix+"shop-b")
	require.NotEqual(t, a, b)
	require.Len(t, a, fairness.MaxKeyLen)
}

func TestPriority(t *testing.T) {
	require.Equal(t, temporal.Priority{FairnessKey: "shop-eu"}, fairness.Priority("shop-eu"))
	require.Equal(t, fairness.Key(strings.Repeat("q", 90)), fairness.Priority(strings.Repeat("q", 90)).FairnessKey)
}
