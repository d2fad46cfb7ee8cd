package activities

import (
	"context"
	"fmt"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// WebhookActivity reads when serve last accepted a webhook event of the
// platform and how many it accepted (the store's webhook_activity), for
// the cursor's hybrid pacing. Counts and times only: nothing of an order
// enters history. A store that keeps no webhook log answers "none",
// which the cursor reads as not live (it polls at interval).
func (a *Activities) WebhookActivity(ctx context.Context, platform string) (api.WebhookActivity, error) {
	ws, ok := a.Store.(store.Webhooks)
	if !ok {
		return api.WebhookActivity{}, nil
	}
	act, found, err := ws.WebhookActivity(ctx, platform)
	if err != nil {
		return api.WebhookActivity{}, fmt.Errorf("webhook activity of %s: %s", textclip.Value(platform), textclip.Message(err.Error()))
	}
	if !found {
		return api.WebhookActivity{}, nil
	}
	return api.WebhookActivity{LastEventAt: act.LastEventAt.UTC(), Events: act.Events}, nil
}
