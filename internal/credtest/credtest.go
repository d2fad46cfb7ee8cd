// Package credtest checks a credentials.Source in tests: its secret and
// its answer to a refusal, any error failing the test.
package credtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
)

// Secret is src's secret now.
func Secret(ctx context.Context, t testing.TB, src credentials.Source) string {
	t.Helper()
	s, err := src.Secret(ctx)
	require.NoError(t, err)
	return s
}

// Refused reports whether src has another secret to try after the
// platform refused tok.
func Refused(ctx context.Context, t testing.TB, src credentials.Source, tok string) bool {
	t.Helper()
	changed, err := src.Refused(ctx, tok)
	require.NoError(t, err)
	return changed
}
