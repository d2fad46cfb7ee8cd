// Package httpapi is the HTTP API of `ordersync serve`: what a back office
// uses to onboard and offboard accounts (platforms) at runtime.
//
// # Overview
//
// It is a thin layer over accounts.Service, the same service the CLI's
// `platform add|edit|pause|resume|remove|apply` commands call, so the two
// behave alike: one way to build a platform from its settings
// (accounts.BuildPlatform, the platforms file's merge and checks), one way
// to edit one (accounts.EditSettings), the same registry writes and the
// same Temporal steps. The routes, their parameters and their answers are
// described in docs/openapi.yaml; a test fails when the handler and the
// document disagree on a route.
//
// # Trust
//
// Every request but GET /healthz carries `Authorization: Bearer <token>`,
// compared in constant time, before anything is read or written. Bodies
// are bounded (MaxBody; an apply takes up to config.MaxFileSize, as a
// platforms file), JSON is decoded strictly (one object, bounded depth,
// unknown query parameters refused), and every text an error echoes back
// (names, fields, reasons) is escaped for a terminal and clipped with
// internal/textclip: the caller may have sent escape sequences.
//
// # Errors
//
// Errors are JSON: {"error": "...", "problems": [{"platform", "field",
// "reason"}]} with 400 (invalid: one problem per field, from
// config.ValidationError), 401, 404, 409 (the revision guard failed, the
// name exists, the name belongs to a removed platform), 413 (body too
// large) and 502 when the registry holds the change but its Temporal step
// failed (the body's "fix" says what to run, "entry" what is registered).
package httpapi
