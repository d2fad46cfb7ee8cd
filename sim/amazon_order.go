package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// An order as searchOrders and getOrder (Orders API v2026-01-01) render
// it: the sim's own order (render), reshaped. orderItems are always there;
// the datasets BUYER, RECIPIENT, PROCEEDS (the grand total and its ITEM and
// SHIPPING breakdowns), FULFILLMENT and PACKAGES (a shipped order's parcel
// with its tracking number) only when includedData asks.

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
	Packages        []amazonPackage    `json:"packages,omitempty"`
}

type amazonPackage struct {
	PackageReferenceID string              `json:"packageReferenceId"`
	CreatedTime        string              `json:"createdTime"`
	PackageStatus      map[string]string   `json:"packageStatus"`
	Carrier            string              `json:"carrier"`
	ShipTime           string              `json:"shipTime"`
	ShippingService    string              `json:"shippingService"`
	TrackingNumber     string              `json:"trackingNumber"`
	PackageItems       []amazonPackageItem `json:"packageItems"`
}

type amazonPackageItem struct {
	OrderItemID string `json:"orderItemId"`
	Quantity    int64  `json:"quantity"`
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
	GrandTotal amazonMoney               `json:"grandTotal"`
	Breakdowns []amazonProceedsBreakdown `json:"breakdowns,omitempty"`
}

type amazonProceedsBreakdown struct {
	Type     string      `json:"type"`
	Subtotal amazonMoney `json:"subtotal"`
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
		if items, ship, ok := amazonBreakdown(o); ok {
			ao.Proceeds.Breakdowns = []amazonProceedsBreakdown{
				{Type: "ITEM", Subtotal: amazonMoney{Amount: items, CurrencyCode: o.Currency}},
				{Type: "SHIPPING", Subtotal: amazonMoney{Amount: ship, CurrencyCode: o.Currency}}}
		}
	}
	if include["PACKAGES"] && shipped {
		p := amazonPackage{PackageReferenceID: "PKG-" + o.ID, CreatedTime: o.UpdatedAt, PackageStatus: map[string]string{"status": "IN_TRANSIT"},
			Carrier: "DHL", ShipTime: o.UpdatedAt, ShippingService: "DHL Paket", TrackingNumber: "00340434" + o.ID}
		if st == statusDelivered {
			p.PackageStatus["status"] = "DELIVERED"
		}
		for i, li := range o.LineItems {
			p.PackageItems = append(p.PackageItems, amazonPackageItem{OrderItemID: AmazonItemID(o.ID, i), Quantity: li.Qty})
		}
		ao.Packages = []amazonPackage{p}
	}
	if include["FULFILLMENT"] {
		ao.Fulfillment = &amazonFulfillment{FulfillmentStatus: amazonStatus(st), FulfilledBy: "MERCHANT"}
	}
	return ao
}

// amazonBreakdown splits a first version's total into its items and
// shipping (4.99 or none); a later version's total (a changed order) is
// left unsplit.
func amazonBreakdown(o wireOrder) (items, ship string, ok bool) {
	var sum int64
	for _, li := range o.LineItems {
		cents, err := strconv.ParseInt(strings.Replace(li.Price, ".", "", 1), 10, 64)
		if err != nil {
			return "", "", false
		}
		sum += cents * li.Qty
	}
	total, err := strconv.ParseInt(strings.Replace(o.Total, ".", "", 1), 10, 64)
	if err != nil || (total != sum && total != sum+499) {
		return "", "", false
	}
	return formatCents(sum), formatCents(total - sum), true
}

// handleAmazonOrder serves getOrder, GET
// /shops/{shop}/amazon/orders/2026-01-01/orders/{orderId}, checked as
// searchOrders is (access token 403, usage plan 429: the seller's one
// bucket, the smaller of the two operations' plans), then includedData
// (400); an order id the seller does not have is 404 "The resource
// specified does not exist.", as the model documents.
func (s *Simulator) handleAmazonOrder(w http.ResponseWriter, r *http.Request) {
	sh := s.amazonSeller(w, r)
	if sh == nil {
		return
	}
	now := s.now()
	authed, denied := s.amazonAuth(sh, r.Header.Get("x-amz-access-token"), now)
	if !sh.amazonAdmit(w, authed, denied, now) {
		return
	}
	include := map[string]bool{}
	for _, d := range csv(r.URL.Query().Get("includedData")) {
		if !slices.Contains(amazonDatasets, d) {
			sh.stats.BadRequests++
			sh.mu.Unlock()
			writeAmazonError(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("Invalid includedData value %q.", d), "")
			return
		}
		include[d] = true
	}
	sh.world.advance(now)
	var it listed
	found := false
	if n, err := strconv.ParseUint(r.PathValue("orderId"), 10, 64); err == nil && n > 1_000_000_000 && n-1_000_000_000 <= 1<<32-1 {
		it, found = shownOrder(sh.world, uint32(n-1_000_000_000))
	}
	sh.mu.Unlock()
	if !found {
		writeAmazonError(w, http.StatusNotFound, "NotFound", "The resource specified does not exist.", "")
		return
	}
	body := map[string]any{"order": renderAmazon(render(it.seq, &it.o, it.v, sh.currency), it.v.status, amazonMarketplaces[sh.currency], include)}
	b, err := json.Marshal(body)
	if err != nil {
		writeAmazonError(w, http.StatusInternalServerError, "InternalFailure", "Encoding the order failed.", "")
		return
	}
	writeBody(w, http.StatusOK, b)
}
