package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// What one store cannot keep, neither keeps (issue 24, item 6): an order
// with a NUL byte or invalid UTF-8 in its text, or an id longer than
// MaxOrderIDBytes (PostgreSQL's index refuses ~2,700 bytes; SQLite took
// anything), is refused by both stores with ErrInvalidOrder naming the
// field, without quoting it. An id of exactly MaxOrderIDBytes is kept by
// both.
func testRefusedAlike(t *testing.T, dsn string) {
	s := openStore(t, dsn)
	ctx := context.Background()
	withStatus := func(status string) connectors.Order {
		o := version("p", "bad", 1)
		o.Status = status
		return o
	}
	withID := func(id string) connectors.Order { return version("p", id, 1) }
	line := func(title string) connectors.Order {
		o := version("p", "bad", 1)
		o.HasLines, o.Lines = true, []connectors.OrderLine{{ID: "l1", Title: title, Quantity: 1}}
		return o
	}
	for name, tc := range map[string]struct {
		order connectors.Order
		msg   string
	}{
		"NUL in status":        {withStatus("paid\x00"), "status holds a NUL byte"},
		"NUL in currency":      {func() connectors.Order { o := version("p", "bad", 1); o.Currency = "E\x00R"; return o }(), "currency holds a NUL byte"},
		"NUL in id":            {withID("a\x00b"), "id holds a NUL byte"},
		"status not UTF-8":     {withStatus("\xff\xfe"), "status is not valid UTF-8"},
		"id of 3,000 bytes":    {withID(strings.Repeat("9", 3000)), "id is 3000 bytes, at most 1024"},
		"NUL in a line's text": {line("a\x00b"), "line 1: title holds a NUL byte"},
	} {
		_, err := s.UpsertOrders(ctx, []connectors.Order{version("p", "good", 1), tc.order})
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrInvalidOrder), "%s: %v", name, err)
		require.Contains(t, err.Error(), tc.msg, name)
		require.Less(t, len(err.Error()), 400, "%s: the error quotes no long id", name)
		n, err := s.CountOrders(ctx, "")
		require.NoError(t, err)
		require.Zero(t, n, "%s: nothing from the batch may be written", name)
		require.Error(t, CheckOrder(tc.order), name)
	}

	// Incompressible, so PostgreSQL's index cannot shrink it below its limit.
	var rnd [MaxOrderIDBytes / 2]byte
	_, _ = rand.Read(rnd[:])
	longest := withID(hex.EncodeToString(rnd[:]))
	require.NoError(t, CheckOrder(longest))
	res := upsert(t, s, version("p", "good", 1), longest)
	require.Equal(t, 2, res.Inserted)
	require.Equal(t, longest.ID, get(t, s, "p", longest.ID).ID)
}
