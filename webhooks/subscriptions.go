package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Topics are the Shopify subscriptions Sync keeps per account, as the
// Admin GraphQL API names them.
var Topics = []string{"ORDERS_CREATE", "ORDERS_UPDATED", "ORDERS_CANCELLED"}

// Subscription is one Shopify webhook subscription.
type Subscription struct {
	ID    string `json:"id"`
	Topic string `json:"topic"`
	URI   string `json:"uri"`
}

// maxAdminBody bounds an Admin API answer: a page of 100 subscriptions is
// a few kilobytes.
const maxAdminBody = 1 << 20

// ShopifyAdmin calls a shop's Admin GraphQL API for its subscriptions.
type ShopifyAdmin struct {
	// Endpoint is the account's endpoint (https://acme.myshopify.com).
	Endpoint   string
	APIVersion string
	// Token is the Admin API access token (sent to Endpoint only).
	Token string
	// Client defaults to one with a 30-second timeout that follows no
	// redirect (the token must not leave the shop's origin).
	Client *resty.Client
}

func (a *ShopifyAdmin) client() *resty.Client {
	if a.Client == nil {
		a.Client = resty.New().SetTimeout(30 * time.Second).SetRedirectPolicy(resty.NoRedirectPolicy()).SetResponseBodyLimit(maxAdminBody)
	}
	return a.Client
}

type gqlError struct {
	Message string `json:"message"`
}

type userError struct {
	Field   []string `json:"field"`
	Message string   `json:"message"`
}

// do posts one GraphQL document and decodes its data into out.
func (a *ShopifyAdmin) do(ctx context.Context, op, query string, vars map[string]any, out any) error {
	url := strings.TrimRight(a.Endpoint, "/") + "/admin/api/" + a.APIVersion + "/graphql.json"
	var ans struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	resp, err := a.client().R().SetContext(ctx).SetHeader("X-Shopify-Access-Token", a.Token).
		SetBody(map[string]any{"query": query, "operationName": op, "variables": vars}).Post(url)
	if err != nil {
		return fmt.Errorf("shopify %s: %s", op, textclip.Message(err.Error()))
	}
	if resp.StatusCode() != http.StatusOK {
		return fmt.Errorf("shopify %s: HTTP %d: %s", op, resp.StatusCode(), textclip.Message(string(resp.Body())))
	}
	if err := json.Unmarshal(resp.Body(), &ans); err != nil {
		return fmt.Errorf("shopify %s: the answer is not JSON: %s", op, textclip.Message(err.Error()))
	}
	if len(ans.Errors) > 0 {
		return fmt.Errorf("shopify %s: %s", op, textclip.Message(ans.Errors[0].Message))
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		return fmt.Errorf("shopify %s: unexpected data: %s", op, textclip.Message(err.Error()))
	}
	return nil
}

const listQuery = `query OrdersyncWebhookSubscriptions($first: Int!, $after: String) {
  webhookSubscriptions(first: $first, after: $after) {
    nodes { id topic uri }
    pageInfo { hasNextPage endCursor }
  }
}`

const createMutation = `mutation OrdersyncWebhookSubscriptionCreate($topic: WebhookSubscriptionTopic!, $subscription: WebhookSubscriptionInput!) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: $subscription) {
    webhookSubscription { id topic uri }
    userErrors { field message }
  }
}`

// maxSubscriptionPages bounds a listing (100 a page).
const maxSubscriptionPages = 20

// List is every subscription of the app on the shop.
func (a *ShopifyAdmin) List(ctx context.Context) ([]Subscription, error) {
	var out []Subscription
	var after any
	for range maxSubscriptionPages {
		var data struct {
			WebhookSubscriptions struct {
				Nodes    []Subscription `json:"nodes"`
				PageInfo struct {
					HasNextPage bool   `json:"hasNextPage"`
					EndCursor   string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"webhookSubscriptions"`
		}
		if err := a.do(ctx, "OrdersyncWebhookSubscriptions", listQuery, map[string]any{"first": 100, "after": after}, &data); err != nil {
			return nil, err
		}
		out = append(out, data.WebhookSubscriptions.Nodes...)
		if !data.WebhookSubscriptions.PageInfo.HasNextPage {
			return out, nil
		}
		after = data.WebhookSubscriptions.PageInfo.EndCursor
	}
	return nil, fmt.Errorf("shopify webhookSubscriptions: more than %d pages", maxSubscriptionPages)
}

// Create subscribes uri to topic.
func (a *ShopifyAdmin) Create(ctx context.Context, topic, uri string) (Subscription, error) {
	var data struct {
		Create struct {
			Subscription *Subscription `json:"webhookSubscription"`
			UserErrors   []userError   `json:"userErrors"`
		} `json:"webhookSubscriptionCreate"`
	}
	if err := a.do(ctx, "OrdersyncWebhookSubscriptionCreate", createMutation, map[string]any{"topic": topic,
		"subscription": map[string]any{"uri": uri, "format": "JSON"}}, &data); err != nil {
		return Subscription{}, err
	}
	if len(data.Create.UserErrors) > 0 {
		ue := data.Create.UserErrors[0]
		return Subscription{}, fmt.Errorf("shopify webhookSubscriptionCreate %s: %s: %s", topic, textclip.Value(strings.Join(ue.Field, ".")), textclip.Message(ue.Message))
	}
	if data.Create.Subscription == nil {
		return Subscription{}, errors.New("shopify webhookSubscriptionCreate " + topic + ": no subscription in the answer")
	}
	return *data.Create.Subscription, nil
}

// SyncReport is what Sync found and did for one account.
type SyncReport struct {
	URI string `json:"uri"`
	// Present are the subscriptions of Topics to URI found in place.
	Present []Subscription `json:"present"`
	// Created are those Sync created (missing, e.g. deleted by Shopify
	// after 8 failed deliveries).
	Created []Subscription `json:"created"`
	// Missing are topics still without a subscription (dry run).
	Missing []string `json:"missing,omitempty"`
}

// Sync makes sure each of Topics has a subscription to uri; with dryRun it
// only reports what is missing.
func Sync(ctx context.Context, a *ShopifyAdmin, uri string, dryRun bool) (SyncReport, error) {
	rep := SyncReport{URI: uri}
	subs, err := a.List(ctx)
	if err != nil {
		return rep, err
	}
	for _, topic := range Topics {
		i := slices.IndexFunc(subs, func(s Subscription) bool { return s.Topic == topic && s.URI == uri })
		if i >= 0 {
			rep.Present = append(rep.Present, subs[i])
			continue
		}
		if dryRun {
			rep.Missing = append(rep.Missing, topic)
			continue
		}
		s, err := a.Create(ctx, topic, uri)
		if err != nil {
			return rep, err
		}
		rep.Created = append(rep.Created, s)
	}
	return rep, nil
}

// IntakeURL is the URL an account's platform posts its events to: base
// (serve's public URL, as the platform reaches it) + Prefix +
// <kind>/<platform>.
func IntakeURL(base, kind, platform string) string {
	return strings.TrimRight(base, "/") + Prefix + kind + "/" + platform
}
