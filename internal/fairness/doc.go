// Package fairness names the Temporal fairness key of every task ordersync
// creates, so the accounts that share a task queue (orders-shopify,
// orders-amazon, ...) share its workers fairly: the server's matcher
// dispatches a backlog round-robin over the keys in it (weighted, default
// weight 1), so one huge account's thousands of queued page tasks cannot
// hold back a small account's ten.
//
// # The rule
//
// An account's tasks carry its platform name as the key; a destination's
// (the Delivery workflow and its activities) carry the destination's name.
// Every command that creates a task sets it explicitly: the cursor and
// Delivery starts, the dead-letter workflow's signal-with-start, slice
// children, page, bulk and bookkeeping activities. The server would
// inherit a workflow's priority into its activities and children (and
// into the next run on continue-as-new), but a cursor started before keys
// existed has none to hand on; setting it on every command gives that
// cursor's new slices their key too. Local activities run inside the
// workflow task and take no queue slot, so they carry none.
//
// # Size
//
// Temporal limits a key to 64 bytes. Platform names are at most 63 by
// validation, but a key is never cut blindly: a longer name keeps its
// first bytes and ends in a hash of the whole name, so two long names
// that share a prefix still get their own keys.
//
// # Server
//
// Keys are inert unless the server's matcher uses them
// (matching.enableFairness; deploy/README.md, "Fairness across accounts");
// the embedded and the PostgreSQL-stack servers ordersync runs turn it on.
package fairness
