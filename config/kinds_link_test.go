package config_test

// The kinds are registered by package connectors (connectors/specs.go),
// which config does not import: its tests load platforms of every kind,
// so this external test file links it into config's test binary.
import _ "github.com/ordersync/ordersync/connectors"
