package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// GetOrder fetches one order through options.get: GET endpoint + get.path
// with {id} replaced by the escaped id, authenticated like a page; the
// order is the body, or the object at get.record_path, read with the same
// fields and lines as a page's records. A status in get.not_found_status
// (404) means no such order. A platform without get.path cannot refetch:
// a PermanentError says which option to set.
func (c *httpKindConnector) GetOrder(ctx context.Context, req OrderRequest) (Order, error) {
	g := c.opts.Get
	if g.Path == "" {
		return Order{}, &PermanentError{Platform: c.platform, Msg: "get one order: options.get.path is not set (the API's get-one-order path, like /orders/{id})"}
	}
	if err := checkGetID(c.platform, req.ID); err != nil {
		return Order{}, err
	}
	base := strings.TrimSuffix(c.url, c.opts.Path)
	target := base + strings.Replace(g.Path, "{id}", pathSegment(req.ID), 1)
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(secret string) (*resty.Response, error) {
		r := c.http.R().SetContext(ctx)
		if err := c.authorize(r, target, secret); err != nil {
			return nil, err
		}
		return r.Get(target)
	})
	if err != nil {
		return Order{}, asTransportError(c.platform, err)
	}
	if slices.Contains(g.NotFoundStatus, resp.StatusCode()) {
		return Order{}, refetchNotFound(c.platform, req.ID)
	}
	if err := c.classify(resp); err != nil {
		return Order{}, err
	}
	raw := json.RawMessage(resp.Body())
	if g.RecordPath != "." && g.RecordPath != "" {
		m, err := decodeObject(raw)
		if err != nil {
			return Order{}, &MalformedError{Platform: c.platform, Page: 1, Offset: jsonErrorOffset(err, len(raw)), Err: err}
		}
		v, ok := lookup(m, g.RecordPath)
		if !ok || v == nil {
			// A null or absent record is the API's way of saying none.
			return Order{}, refetchNotFound(c.platform, req.ID)
		}
		if raw, err = json.Marshal(v); err != nil {
			return Order{}, &MalformedError{Platform: c.platform, Page: 1, Offset: -1, Err: fmt.Errorf("%s: %w", g.RecordPath, err)}
		}
	}
	o, err := c.order(raw)
	if err != nil {
		return Order{}, &MalformedError{Platform: c.platform, Page: 1, Offset: -1, Err: fmt.Errorf("order %s: %w", textclip.Value(req.ID), err)}
	}
	return o, nil
}
