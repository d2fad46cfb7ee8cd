package connectors

import (
	"encoding/json"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

func init() { registerCanonical("sim", simCanonical) }

// simStates maps the simulator's statuses (sim/order.go: pending -> paid
// -> shipped -> delivered, cancelled and refunded on the way) to the
// canonical status, financial and fulfilment state. The simulator
// cancels only orders not yet shipped.
var simStates = map[string][3]string{
	"pending":   {order.StatusOpen, order.FinancialPending, order.FulfillmentUnfulfilled},
	"paid":      {order.StatusOpen, order.FinancialPaid, order.FulfillmentUnfulfilled},
	"shipped":   {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"delivered": {order.StatusCompleted, order.FinancialPaid, order.FulfillmentFulfilled},
	"cancelled": {order.StatusCancelled, order.FinancialUnknown, order.FulfillmentUnfulfilled},
	"refunded":  {order.StatusCompleted, order.FinancialRefunded, order.FulfillmentUnknown},
}

// simCanonOrder is the customer part of the simulator's order JSON; the
// rest is the header the connector read.
type simCanonOrder struct {
	Customer struct {
		Name    canonText `json:"name"`
		Email   canonText `json:"email"`
		Phone   canonText `json:"phone"`
		Address struct {
			Street  canonText `json:"street"`
			City    canonText `json:"city"`
			Zip     canonText `json:"zip"`
			Country canonText `json:"country"`
		} `json:"address"`
	} `json:"customer"`
}

// simCanonical maps a simulator order: the header and lines, the status
// by simStates, the customer, and the customer's address as the shipping
// address (the simulator has one address per order).
func simCanonical(_ config.Platform, o Order) *order.Canonical {
	c := headerCanonical(o)
	c.Status = order.StatusUnknown
	if s, ok := simStates[o.Status]; ok {
		c.Status, c.FinancialStatus, c.FulfillmentStatus = s[0], s[1], s[2]
	}
	var s simCanonOrder
	if json.Unmarshal(o.Raw, &s) != nil {
		return c
	}
	cu := s.Customer
	c.Customer = canonCustomer(order.Customer{Name: cu.Name.String(), Email: cu.Email.String(), Phone: cu.Phone.String()})
	c.ShippingAddress = canonAddress(order.Address{Name: cu.Name.String(), Line1: cu.Address.Street.String(), City: cu.Address.City.String(),
		PostalCode: cu.Address.Zip.String(), CountryCode: cu.Address.Country.String(), Phone: cu.Phone.String()})
	return c
}
