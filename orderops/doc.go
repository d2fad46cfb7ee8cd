// Package orderops is the order operations the CLI (`ordersync orders
// get|search|refetch`) and the HTTP API (/v1/orders) share: one stored
// order with its versions and where each destination stands with it, a
// search over stored orders, and the refetch of orders now through their
// platforms' get-one-order calls (the Refetch workflow). The CLI and the
// API only parse and print; what an answer means is decided here once.
package orderops
