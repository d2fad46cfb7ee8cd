package tserver

import "go.temporal.io/server/common/dynamicconfig"

// FairnessDynamicConfig is the dynamic config both servers set so the
// matcher honours the fairness key every ordersync task carries
// (internal/fairness): the accounts sharing a task queue get its workers
// round-robin by key instead of first come, first served, so one huge
// account's backlog cannot hold back the small ones. It implies the
// priority matcher (matching.useNewMatcher, on by default in server
// v1.32 anyway). Without it the keys are carried and ignored.
func FairnessDynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		dynamicconfig.MatchingEnableFairness.Key(): true,
	}
}
