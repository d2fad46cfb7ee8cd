// Package activities holds the side effects of ordersync's workflows: fetching
// a page of orders and storing it in one step, recording dead letters and
// raising alerts. Activities return only counts, tokens and timestamps, so
// order data and secrets never enter Temporal history.
package activities

import (
	"context"
	"github.com/ordersync/ordersync/api"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/store"
)

//go:generate go run go.uber.org/mock/mockgen -destination=mocks_test.go -package=activities . ConnectorSource,OrderStore
//go:generate go run go.uber.org/mock/mockgen -destination=mock_connector_test.go -package=activities github.com/ordersync/ordersync/connectors Connector

// ConnectorSource builds (or reuses) the connector for a platform's settings.
type ConnectorSource interface {
	Connector(p api.Settings) (connectors.Connector, error)
}

// OrderStore is the part of the store the activities write to.
type OrderStore interface {
	UpsertOrders(ctx context.Context, orders []connectors.Order) (store.UpsertResult, error)
}

// Activities carries the dependencies of every activity. It is registered
// once per worker; workflows call its methods through a nil *Activities.
type Activities struct {
	Store      OrderStore
	Connectors ConnectorSource
	// Limiters throttle requests per platform inside this process.
	Limiters *Limiters
	// Client signals the dead-letter workflow; nil in unit tests that do not need it.
	Client  client.Client
	Alerter Alerter
	Logger  *slog.Logger
	// Metrics counts pages, upserts and API errors; nil records nothing.
	Metrics *metrics.Recorder
	// Feed is the store's change feed, read by delivery activities; nil in
	// workers that deliver nothing.
	Feed ChangeFeed
	// Deliveries holds the worker's destinations and their senders.
	Deliveries *Deliveries
	// FutureSkew is how far ahead of now an order's updated_at may lie and
	// still be stored; zero means DefaultFutureSkew.
	FutureSkew time.Duration
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}
