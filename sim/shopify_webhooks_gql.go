package sim

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The Admin GraphQL operations of webhook subscriptions on the Shopify
// surface (webhooks.go): webhookSubscriptions(first:, after:),
// webhookSubscriptionCreate(topic:, webhookSubscription: {uri, format})
// and webhookSubscriptionDelete(id:). Arguments come as variables or
// literals; the input object as a variable (the parser reads no object
// literals). Shopify's checks are played: a known topic, an https uri
// (http only to loopback, for tests), one subscription per topic and uri.

var shopifyWebhookTopics = map[string]bool{"ORDERS_CREATE": true, "ORDERS_UPDATED": true, "ORDERS_CANCELLED": true,
	"ORDERS_PAID": true, "ORDERS_FULFILLED": true, "ORDERS_EDITED": true, "APP_UNINSTALLED": true}

// shopifyWebhookOp answers a webhook subscription operation; ok is false
// for any other document, which the orders path then takes. sh.mu is held.
func (s *Simulator) shopifyWebhookOp(sh *shop, op, query string, vars map[string]any) (shopifyAnswer, bool) {
	if !strings.Contains(query, "webhookSubscription") {
		return shopifyAnswer{}, false
	}
	doc, err := parseGQL(query)
	if err != nil {
		return shopifyAnswer{}, false
	}
	def, found := doc.operation(op)
	if !found {
		return shopifyAnswer{}, false
	}
	sel, err := doc.expand(def.sel, 0)
	if err != nil || len(sel) != 1 {
		return shopifyAnswer{}, false
	}
	root := sel[0]
	arg := func(name string) any {
		v, ok := root.args[name]
		if !ok {
			return nil
		}
		return v.resolve(vars)
	}
	cost := func(n int) *shopifyCostExt {
		return &shopifyCostExt{Cost: shopifyCost{RequestedQueryCost: n, ActualQueryCost: &n, ThrottleStatus: sh.points.status()}}
	}
	switch {
	case root.name == "webhookSubscriptions" && def.kind == "query":
		first, _ := arg("first").(float64)
		if first < 1 || first > shopifyMaxFirst {
			return shopifyErrors("BAD_REQUEST", "first must be between 1 and %d", shopifyMaxFirst), true
		}
		after := int64(0)
		if a, ok := arg("after").(string); ok && a != "" {
			if after, err = strconv.ParseInt(a, 10, 64); err != nil {
				return shopifyErrors("BAD_REQUEST", "Invalid cursor for current pagination sort."), true
			}
		}
		var nodes []any
		more := false
		var end any
		for _, sub := range s.webhooks.list(sh.name) {
			if sub.id <= after {
				continue
			}
			if len(nodes) == int(first) {
				more = true
				break
			}
			nodes = append(nodes, webhookSubNode(sub))
			end = strconv.FormatInt(sub.id, 10)
		}
		if nodes == nil {
			nodes = []any{}
		}
		return shopifyAnswer{Data: map[string]any{root.key(): map[string]any{"nodes": nodes,
			"pageInfo": map[string]any{"hasNextPage": more, "endCursor": end}}}, Extensions: cost(1 + len(nodes))}, true
	case root.name == "webhookSubscriptionCreate" && def.kind == "mutation":
		topic, _ := arg("topic").(string)
		if !shopifyWebhookTopics[topic] {
			return shopifyErrors("BAD_REQUEST", "Variable $topic of type WebhookSubscriptionTopic! was provided invalid value %q", topic), true
		}
		in, _ := arg("webhookSubscription").(map[string]any)
		uri, _ := in["uri"].(string)
		if uri == "" {
			uri, _ = in["callbackUrl"].(string)
		}
		fail := func(field, msg string) (shopifyAnswer, bool) {
			return shopifyAnswer{Data: map[string]any{root.key(): map[string]any{"webhookSubscription": nil,
				"userErrors": []any{map[string]any{"field": []string{"webhookSubscription", field}, "message": msg}}}}, Extensions: cost(10)}, true
		}
		u, err := url.Parse(uri)
		switch {
		case uri == "" || err != nil || u.Host == "":
			return fail("uri", "Address is invalid")
		case u.Scheme == "http" && !isLoopbackHost(u.Hostname()):
			return fail("uri", "Address protocol http:// is not supported")
		case u.Scheme != "https" && u.Scheme != "http":
			return fail("uri", "Address protocol "+u.Scheme+":// is not supported")
		}
		for _, sub := range s.webhooks.list(sh.name) {
			if sub.topic == topic && sub.uri == uri {
				return fail("uri", "Address for this topic has already been taken")
			}
		}
		sub := s.webhooks.subscribe(sh.name, topic, uri)
		return shopifyAnswer{Data: map[string]any{root.key(): map[string]any{"webhookSubscription": webhookSubNode(*sub),
			"userErrors": []any{}}}, Extensions: cost(10)}, true
	case root.name == "webhookSubscriptionDelete" && def.kind == "mutation":
		gid, _ := arg("id").(string)
		n, ok := strings.CutPrefix(gid, "gid://shopify/WebhookSubscription/")
		id, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || !s.webhooks.remove(sh.name, id) {
			return shopifyAnswer{Data: map[string]any{root.key(): map[string]any{"deletedWebhookSubscriptionId": nil,
				"userErrors": []any{map[string]any{"field": []string{"id"}, "message": "Webhook subscription does not exist"}}}}, Extensions: cost(10)}, true
		}
		return shopifyAnswer{Data: map[string]any{root.key(): map[string]any{"deletedWebhookSubscriptionId": gid, "userErrors": []any{}}}, Extensions: cost(10)}, true
	}
	return shopifyAnswer{}, false
}

func webhookSubNode(s webhookSub) map[string]any {
	return map[string]any{"id": s.gid(), "topic": s.topic, "uri": s.uri, "callbackUrl": s.uri, "format": "JSON",
		"createdAt": s.created.UTC().Format(time.RFC3339), "updatedAt": s.created.UTC().Format(time.RFC3339)}
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
