package connectors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOrderHead(t *testing.T) {
	f := func(name, value string) platformField { return platformField{name, value} }
	tests := []struct {
		name                 string
		id, updated, created platformField
		wantUpdated          time.Time
		wantCreated          time.Time
		wantErr              string
	}{
		{name: "both times, to UTC", id: f("orderId", "E-1"), updated: f("lastModifiedDate", "2026-03-01T11:30:00.5+01:00"),
			created:     f("creationDate", "2026-02-28T09:00:00Z"),
			wantUpdated: time.Date(2026, 3, 1, 10, 30, 0, 5e8, time.UTC), wantCreated: time.Date(2026, 2, 28, 9, 0, 0, 0, time.UTC)},
		{name: "no creation time", id: f("orderId", "E-1"), updated: f("lastModifiedDate", "2026-03-01T10:30:00Z"), created: f("creationDate", ""),
			wantUpdated: time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)},
		{name: "no id", id: f("AmazonOrderId", ""), updated: f("LastUpdateDate", "2026-03-01T10:30:00Z"), wantErr: "missing AmazonOrderId"},
		{name: "no update time", id: f("orderId", "E-1"), updated: f("lastModifiedDate", ""),
			wantErr: `id E-1: lastModifiedDate "" is not an ISO 8601 time`},
		{name: "update time without a zone", id: f("orderId", "E-1"), updated: f("lastModifiedDate", "2026-03-01T10:30:00"),
			wantErr: `id E-1: lastModifiedDate "2026-03-01T10:30:00" is not an ISO 8601 time`},
		{name: "bad creation time", id: f("AmazonOrderId", "A-1"), updated: f("LastUpdateDate", "2026-03-01T10:30:00Z"), created: f("PurchaseDate", "yesterday"),
			wantErr: `id A-1: PurchaseDate "yesterday" is not an ISO 8601 time`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updated, created, err := orderHead(tc.id, tc.updated, tc.created)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantUpdated, updated)
			require.Equal(t, tc.wantCreated, created)
			require.Equal(t, time.UTC, updated.Location())
		})
	}
}
