package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// amazonV0 lists orders through the legacy Orders v0 getOrders
// (options.api_version v0): GET <endpoint>/orders/v0/orders. Amazon removes
// it on AmazonV0Removal; `config validate` warns about it.
type amazonV0 struct {
	*amazonAPI
	url string
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
//
// Both bounds of getOrders are inclusive and times have whole seconds, so
// the request covers [floor(From), last second before To].
func (c *amazonV0) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	before := lastInstantBefore(req.To.UTC(), time.Second)
	if err := c.checkSettled(before, "getOrders", time.RFC3339); err != nil {
		return Page{}, err
	}
	gen, token := amazonGeneration(req.Token)
	req.Token = token
	if strings.HasPrefix(req.Token, amazon2026TokenPrefix) {
		// A slice that began on 2026-01-01 and continues on v0 (the
		// platform moved back): its token means nothing to getOrders, so
		// the window starts over; orders read twice are harmless. A
		// restart token (amazonRestartToken) asks for the same.
		req.Token = ""
	}
	q := map[string]string{"MarketplaceIds": c.marketplaces}
	if req.Token != "" {
		// "If NextToken is present, that will be used to retrieve the orders
		// instead of other criteria": only the token and the required
		// MarketplaceIds go with it.
		q["NextToken"] = req.Token
	} else {
		q["LastUpdatedAfter"] = req.From.UTC().Truncate(time.Second).Format(time.RFC3339)
		q["LastUpdatedBefore"] = before.Format(time.RFC3339)
		if size := pageSize(req, c.pageSize); size > 0 {
			q["MaxResultsPerPage"] = strconv.Itoa(size)
		}
	}
	resp, err := c.get(ctx, c.url, q)
	if err != nil {
		return Page{}, err
	}
	if req.Token != "" && amazonUnusableToken(resp.StatusCode(), resp.Body()) {
		// A NextToken getOrders refuses restarts the window, as on
		// 2026-01-01 (amazonRestartToken): after a slot of its own.
		return Page{NextToken: amazonRestartToken(req.Token, c.now()), RateLimit: headerFloat(resp.Header(), amazonRateHeader)}, nil
	}
	if err := responseError(c.platform, c.cred, resp, amazonRateHeader); err != nil {
		return Page{}, err
	}
	page, err := c.decodePage(resp.Body(), req.Page)
	page.RateLimit = headerFloat(resp.Header(), amazonRateHeader)
	page.NextToken = withGeneration(gen, page.NextToken)
	return page, err
}

// amazonOrder is the part of an SP-API v0 Order the connector reads.
type amazonOrder struct {
	AmazonOrderID  string `json:"AmazonOrderId"`
	PurchaseDate   string `json:"PurchaseDate"`
	LastUpdateDate string `json:"LastUpdateDate"`
	OrderStatus    string `json:"OrderStatus"`
	OrderTotal     *struct {
		CurrencyCode string `json:"CurrencyCode"`
		Amount       string `json:"Amount"`
	} `json:"OrderTotal"`
	NumberOfItemsShipped   int `json:"NumberOfItemsShipped"`
	NumberOfItemsUnshipped int `json:"NumberOfItemsUnshipped"`
}

func (c *amazonV0) decodePage(body []byte, page int) (Page, error) {
	items, err := decodeArrayPath(c.platform, page, body, []string{"payload", "Orders"})
	if err != nil {
		return Page{}, err
	}
	var env struct {
		Payload struct {
			NextToken string `json:"NextToken"`
		} `json:"payload"`
	}
	if err := decodeJSON(c.platform, page, body, &env); err != nil {
		return Page{}, err
	}
	orders, err := decodeOrders(c.platform, page, items, c.order)
	if err != nil {
		return Page{}, err
	}
	return Page{Orders: orders, NextToken: env.Payload.NextToken}, nil
}

// order normalises one SP-API v0 order. Pending orders carry no OrderTotal
// (the total is then ""); getOrders lists no line items, so LineCount is the
// number of units, shipped plus unshipped, and Lines stay unknown.
func (c *amazonV0) order(ao amazonOrder, raw json.RawMessage) (Order, error) {
	updated, created, err := orderHead(platformField{"AmazonOrderId", ao.AmazonOrderID}, platformField{"LastUpdateDate", ao.LastUpdateDate}, platformField{"PurchaseDate", ao.PurchaseDate})
	if err != nil {
		return Order{}, err
	}
	o := Order{Platform: c.platform, ID: ao.AmazonOrderID, Status: ao.OrderStatus, CreatedAt: created,
		UpdatedAt: updated, LineCount: ao.NumberOfItemsShipped + ao.NumberOfItemsUnshipped, Raw: raw}
	if t := ao.OrderTotal; t != nil {
		if !ValidDecimal(t.Amount) {
			return Order{}, fmt.Errorf("id %s: OrderTotal.Amount %q is not a decimal number", textclip.Value(ao.AmazonOrderID), textclip.Value(t.Amount))
		}
		o.Currency, o.Total = t.CurrencyCode, t.Amount
	}
	return o, nil
}
