// Package e2e runs ordersync for real, in one process: the embedded Temporal
// server, the simulator over HTTP, a SQLite store and real workers. It is
// the only test package that links the Temporal server, so the slow build
// happens once.
package e2e
