package sim

import (
	"fmt"
	"strings"
)

// An order as searchOrders (Orders API v2026-01-01) renders it: the sim's
// own order (render), reshaped. orderItems are always there; the datasets
// BUYER, RECIPIENT, PROCEEDS and FULFILLMENT only when includedData asks.

type amazonOrder struct {
	OrderID         string             `json:"orderId"`
	CreatedTime     string             `json:"createdTime"`
	LastUpdatedTime string             `json:"lastUpdatedTime"`
	SalesChannel    amazonSalesChannel `json:"salesChannel"`
	Buyer           *amazonBuyer       `json:"buyer,omitempty"`
	Recipient       *amazonRecipient   `json:"recipient,omitempty"`
	Proceeds        *amazonProceeds    `json:"proceeds,omitempty"`
	Fulfillment     *amazonFulfillment `json:"fulfillment,omitempty"`
	OrderItems      []amazonOrderItem  `json:"orderItems"`
}

type amazonSalesChannel struct {
	ChannelName     string `json:"channelName"`
	MarketplaceID   string `json:"marketplaceId"`
	MarketplaceName string `json:"marketplaceName"`
}

type amazonBuyer struct {
	BuyerName  string `json:"buyerName"`
	BuyerEmail string `json:"buyerEmail"`
}

type amazonRecipient struct {
	DeliveryAddress amazonAddress `json:"deliveryAddress"`
}

type amazonAddress struct {
	Name         string `json:"name"`
	AddressLine1 string `json:"addressLine1"`
	City         string `json:"city"`
	PostalCode   string `json:"postalCode"`
	CountryCode  string `json:"countryCode"`
	Phone        string `json:"phone"`
	AddressType  string `json:"addressType"`
}

type amazonMoney struct {
	Amount       string `json:"amount"`
	CurrencyCode string `json:"currencyCode"`
}

type amazonProceeds struct {
	GrandTotal amazonMoney `json:"grandTotal"`
}

type amazonFulfillment struct {
	FulfillmentStatus string `json:"fulfillmentStatus"`
	FulfilledBy       string `json:"fulfilledBy"`
}

type amazonOrderItem struct {
	OrderItemID     string                 `json:"orderItemId"`
	QuantityOrdered int64                  `json:"quantityOrdered"`
	Product         amazonProduct          `json:"product"`
	Fulfillment     *amazonItemFulfillment `json:"fulfillment,omitempty"`
}

type amazonProduct struct {
	ASIN      string      `json:"asin"`
	Title     string      `json:"title"`
	SellerSKU string      `json:"sellerSku"`
	Price     amazonPrice `json:"price"`
}

type amazonPrice struct {
	UnitPrice amazonMoney `json:"unitPrice"`
}

type amazonItemFulfillment struct {
	QuantityFulfilled   int64 `json:"quantityFulfilled"`
	QuantityUnfulfilled int64 `json:"quantityUnfulfilled"`
}

// amazonStatus is a sim status as a FulfillmentStatus: paid orders wait for
// shipment; a delivered or refunded order stays shipped (a refund moves
// money, not parcels).
func amazonStatus(st status) string {
	switch st {
	case statusPending:
		return "PENDING"
	case statusPaid:
		return "UNSHIPPED"
	case statusCancelled:
		return "CANCELLED"
	}
	return "SHIPPED"
}

// AmazonItemID is the orderItemId the Amazon surface gives line i (0-based)
// of order id: the order id and the line's 1-based position.
func AmazonItemID(orderID string, i int) string { return fmt.Sprintf("%s%02d", orderID, i+1) }

// renderAmazon reshapes an order of the sim's own API.
func renderAmazon(o wireOrder, st status, market amazonMarketplace, include map[string]bool) amazonOrder {
	ao := amazonOrder{
		OrderID:         o.ID,
		CreatedTime:     o.CreatedAt,
		LastUpdatedTime: o.UpdatedAt,
		SalesChannel:    amazonSalesChannel{ChannelName: "AMAZON", MarketplaceID: market.id, MarketplaceName: market.name},
		OrderItems:      make([]amazonOrderItem, len(o.LineItems)),
	}
	shipped := amazonStatus(st) == "SHIPPED"
	for i, li := range o.LineItems {
		ao.OrderItems[i] = amazonOrderItem{
			OrderItemID:     AmazonItemID(o.ID, i),
			QuantityOrdered: li.Qty,
			Product: amazonProduct{ASIN: "B000" + strings.TrimPrefix(li.SKU, "SKU-") + "SM", Title: li.Title, SellerSKU: li.SKU,
				Price: amazonPrice{UnitPrice: amazonMoney{Amount: li.Price, CurrencyCode: o.Currency}}},
		}
		if include["FULFILLMENT"] {
			f := &amazonItemFulfillment{QuantityUnfulfilled: li.Qty}
			if shipped {
				f.QuantityFulfilled, f.QuantityUnfulfilled = li.Qty, 0
			}
			ao.OrderItems[i].Fulfillment = f
		}
	}
	if include["BUYER"] {
		ao.Buyer = &amazonBuyer{BuyerName: o.Customer.Name, BuyerEmail: o.Customer.Email}
	}
	if include["RECIPIENT"] {
		a := o.Customer.Address
		ao.Recipient = &amazonRecipient{DeliveryAddress: amazonAddress{Name: o.Customer.Name, AddressLine1: a.Street, City: a.City,
			PostalCode: a.Zip, CountryCode: a.Country, Phone: o.Customer.Phone, AddressType: "RESIDENTIAL"}}
	}
	if include["PROCEEDS"] {
		ao.Proceeds = &amazonProceeds{GrandTotal: amazonMoney{Amount: o.Total, CurrencyCode: o.Currency}}
	}
	if include["FULFILLMENT"] {
		ao.Fulfillment = &amazonFulfillment{FulfillmentStatus: amazonStatus(st), FulfilledBy: "MERCHANT"}
	}
	return ao
}
