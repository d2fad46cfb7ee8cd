// Package api is ordersync's contract with the outside world: workflow IDs,
// workflow type names, and the names and JSON shapes of every signal, update
// and query. The CLI, the workflows, the activities and anyone using
// `temporal workflow signal` speak exactly these. Changing a name or a JSON
// field here breaks running workflows and operators' scripts.
package api
