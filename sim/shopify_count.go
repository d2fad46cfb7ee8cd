package sim

// The Shopify surface's ordersCount
// (https://shopify.dev/docs/api/admin-graphql/latest/queries/ordersCount),
// as the connector's count reconciliation sends it:
//
//	query($query: String!) { ordersCount(query: $query, limit: null) { count precision } }
//
// $query is the orders query's updated_at search syntax; the count is of
// the orders whose shown updated_at lies in the window, those hidden from
// the list endpoint and the orders query included (HideFromList): the
// count is the platform's index, the list its search. limit defaults to
// 10,000 as Shopify's; null lifts it; a count that reaches the limit says
// AT_LEAST. The query costs one point, and exists from API version 2024-07
// on: an older version is answered as Shopify answers an unknown field.

import "math"

const (
	shopifyCountRoot         = "ordersCount"
	shopifyCountDefaultLimit = 10000
	shopifyCountCost         = 1
	shopifyCountSince        = "2024-07"
)

// parseShopifyCount checks an ordersCount request: its fields, its search
// and its limit (req.first: -1 for none).
func parseShopifyCount(op string, root gqlSel, vars map[string]any) (shopifyRequest, *shopifyAnswer) {
	fail := func(code, format string, args ...any) (shopifyRequest, *shopifyAnswer) {
		a := shopifyErrors(code, format, args...)
		return shopifyRequest{}, &a
	}
	for _, f := range root.sub {
		if f.name != "count" && f.name != "precision" && f.name != "__typename" {
			return fail("undefinedField", "Field '%s' doesn't exist on type 'Count'", f.name)
		}
	}
	req := shopifyRequest{op: op, root: shopifyCountRoot, sel: root.sub, vars: vars, cost: shopifyCountCost, first: shopifyCountDefaultLimit}
	var search string
	if q, ok := root.args["query"]; ok {
		s, isString := q.resolve(vars).(string)
		if !isString && q.resolve(vars) != nil {
			return fail("BAD_REQUEST", "Argument 'query' on Field 'ordersCount' has an invalid value; expected type 'String'")
		}
		search = s
	}
	lo, hi, err := parseShopifySearch(search)
	if err != nil {
		return fail("BAD_REQUEST", "%v", err)
	}
	req.lo, req.hi = lo, hi
	if l, ok := root.args["limit"]; ok {
		switch v := l.resolve(vars).(type) {
		case nil:
			req.first = -1
		case int64:
			req.first = int(v)
		case float64:
			req.first = int(v)
			if float64(req.first) != v {
				req.first = 0
			}
		default:
			req.first = 0
		}
		if req.first == 0 || req.first < -1 || req.first > math.MaxInt32 {
			return fail("BAD_REQUEST", "Argument 'limit' on Field 'ordersCount' must be a positive Int or null")
		}
	}
	return req, nil
}

// shopifyCountData counts the window on the shop's world (locked,
// advanced): every order shown with updated_at in [lo, hi), hidden from
// the list or not.
func (s *Simulator) shopifyCountData(sh *shop, req shopifyRequest) (any, int, int, *shopifyAnswer) {
	if req.version != "unstable" && req.version < shopifyCountSince {
		a := shopifyErrors("undefinedField", "Field 'ordersCount' doesn't exist on type 'QueryRoot'")
		return nil, 0, 0, &a
	}
	n, precision := 0, "EXACT"
	sh.world.index.Ascend(entry{upd: req.lo}, func(e entry) bool {
		if e.upd >= req.hi {
			return false
		}
		if req.first > 0 && n >= req.first {
			precision = "AT_LEAST"
			return false
		}
		n++
		return true
	})
	out := map[string]any{}
	for _, f := range req.sel {
		key := f.name
		if f.alias != "" {
			key = f.alias
		}
		switch f.name {
		case "count":
			out[key] = n
		case "precision":
			out[key] = precision
		case "__typename":
			out[key] = "Count"
		}
	}
	return map[string]any{shopifyCountRoot: out}, shopifyCountCost, 0, nil
}
