// Package accounts owns the registry of accounts (platforms) and
// destinations: the source of truth every worker reads, kept in the store.
//
// # Overview
//
// An account is data, not a line in a file every worker must hold: it is
// added, edited, paused and removed at runtime (`ordersync platform
// add|edit|remove`, `platform apply -f`, the HTTP API of `ordersync
// serve`), and the running workers see the change within seconds.
//
// # State model
//
//	(none) --add--> active <--pause/resume--> paused
//	                   \                        /
//	                    `------ remove ------->'--> removed (tombstone)
//	removed --add with the removed revision (explicit reuse)--> active
//
// Every write gets the next registry-wide revision, so an entry's revision
// grows on every change and a cache catches up with one ordered read of
// the changes after the revision it has seen. A removed entry stays as a
// tombstone: every cache learns of the removal, and its name is not taken
// again by accident.
//
// # Where settings go
//
// An entry holds the merged, validated settings (credential references,
// never secrets). Workers resolve an account's identity (kind, endpoint,
// credential reference, options) from the registry by name; workflow
// messages cannot change it.
//
// # Failure handling
//
// Writes are guarded by the revision the writer read (optimistic
// concurrency): two operators editing one account at once cannot silently
// overwrite each other; the second gets ErrConflict and reads again. A
// worker whose store is unreachable keeps its last view and retries.
package accounts
