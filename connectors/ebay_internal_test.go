package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEbayUnitPrice(t *testing.T) {
	tests := []struct {
		cost     string
		quantity int64
		want     string
	}{
		{"19.99", 1, "19.99"},
		{"30.00", 3, "10.00"},
		{"5.5", 2, "2.75"},         // exact with more decimals than the cost
		{"10.00", 3, ""},           // 3.333...: no price was 3.33
		{"0.01", 64, "0.00015625"}, // the most extra decimals needed below 128
		{"1", 128, ""},             // would need seven
		{"0.00", 4, "0.00"},
		{"0.05", 5, "0.01"},
		{"-12.00", 4, "-3.00"},
		{"12", 0, ""}, // no units: no unit price
		{"12", -1, ""},
		{"", 1, ""},
		{"1e3", 1, ""},
		{"123456789012345678901234567890.00", 2, "61728394506172839450617283945.00"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ebayUnitPrice(tt.cost, tt.quantity), "%s / %d", tt.cost, tt.quantity)
	}
}
