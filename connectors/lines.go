package connectors

import (
	"fmt"
	"strconv"

	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/order"
)

// OrderLine is one line of an order (package order).
type OrderLine = order.Line

// PositionLineID is the id of line i (0-based) of an order whose API gives
// its lines no id: the line's 1-based position.
func PositionLineID(i int) string { return strconv.Itoa(i + 1) }

// linesFrom turns a platform's line items into lines with conv. A bad item
// is named by its place in the platform's array (field[i]); a line id that
// repeats an earlier one is an error, since a line id names one line.
func linesFrom[T any](field string, items []T, conv func(i int, it T) (OrderLine, error)) ([]OrderLine, error) {
	lines := make([]OrderLine, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		l, err := conv(i, it)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		if seen[l.ID] {
			return nil, fmt.Errorf("%s[%d]: line id %s appears twice", field, i, textclip.Value(l.ID))
		}
		seen[l.ID] = true
		lines = append(lines, l)
	}
	return lines, nil
}

// checkLineValues rejects what no platform means: a missing id, a negative
// quantity, a unit price that is not a plain decimal. The names are the
// platform's fields, for the error.
func checkLineValues(l OrderLine, idName, quantityName, priceName string) error {
	switch {
	case l.ID == "":
		return fmt.Errorf("missing %s", idName)
	case l.Quantity < 0:
		return fmt.Errorf("%s %s: %s %d is negative", idName, textclip.Value(l.ID), quantityName, l.Quantity)
	case l.UnitPrice != "" && !ValidDecimal(l.UnitPrice):
		return fmt.Errorf("%s %s: %s %q is not a decimal number", idName, textclip.Value(l.ID), priceName, textclip.Value(l.UnitPrice))
	}
	return nil
}
