package connectors

import (
	"strings"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

func init() { registerCanonical("http", httpCanonical) }

// httpStatusWords maps the status words most order APIs use, in any case,
// to the canonical status. The declarative kind knows only what its
// field mapping reads (options.fields and options.lines), so its
// canonical order is that header and those lines; a word not listed is
// unknown, and the word itself stays in platform_status.
var httpStatusWords = map[string]string{
	"new": order.StatusOpen, "open": order.StatusOpen, "pending": order.StatusOpen, "processing": order.StatusOpen,
	"paid": order.StatusOpen, "unfulfilled": order.StatusOpen, "on-hold": order.StatusOpen, "on_hold": order.StatusOpen,
	"completed": order.StatusCompleted, "complete": order.StatusCompleted, "closed": order.StatusCompleted,
	"fulfilled": order.StatusCompleted, "shipped": order.StatusCompleted, "delivered": order.StatusCompleted,
	"cancelled": order.StatusCancelled, "canceled": order.StatusCancelled, "voided": order.StatusCancelled,
}

// httpCanonical is the header form (status, currency, total, lines) with
// the status mapped by httpStatusWords.
func httpCanonical(_ config.Platform, o Order) *order.Canonical {
	c := headerCanonical(o)
	c.Status = order.StatusUnknown
	if s, ok := httpStatusWords[strings.ToLower(strings.TrimSpace(o.Status))]; ok {
		c.Status = s
	}
	return c
}
