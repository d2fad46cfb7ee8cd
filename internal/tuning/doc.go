// Package tuning owns a platform's tuning: the settings its workflows
// decide by (Settings, exported to workflow inputs as api.Settings), their
// types (Duration, Windows, RateLimit, DeadLetterRetry) and the rules that
// check them. It sits under both config (the platforms file and the
// account registry's schema, which adds identity: endpoint, credentials,
// options) and api (the Temporal wire contract), so that one rule serves
// the file, the CLI, the registry and the `config` signal, and api never
// needs config.
package tuning
