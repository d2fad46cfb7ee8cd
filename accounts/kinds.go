package accounts

// The registry validates every platform it is given (config.Platform.
// Validate), which needs the kinds' specs; package connectors registers
// them from its init (connectors/specs.go), and config does not import it.
// Linking it here makes every user of the registry (serve, onboarding,
// workers) check platforms by their kind, never refuse them all as of an
// unregistered kind.
import _ "github.com/ordersync/ordersync/connectors"
