package workflows

// Every workflow.GetVersion change ID lives here, with what it guards. A
// workflow change that would take another path on an existing history gets
// a new ID in this list; recorded histories in testdata/histories are never
// re-recorded to make a change pass (see replay_test.go).
//
// Several IDs are asked for lazily, only at the point where the new rule
// would decide differently (a repeated token, a payload the old code
// accepted): ordinary runs then record no marker at all, and a history
// recorded before the change replays the old decision.
const (
	// versionAdaptiveSpan guards adaptive slice sizing: runs started before
	// it keep one-interval slices, so their histories replay unchanged.
	versionAdaptiveSpan = "adaptive-backfill-span"

	// resweepFromFetchStart guards scheduleResweep: the first version
	// compared the delay with when the slice finished, so a fetch that
	// started early but finished late (retried pages) got no re-sweep.
	resweepFromFetchStart = "resweep-from-fetch-start"

	// versionRepeatedToken guards FetchSlice's check for a next-page token
	// it has already followed (a platform paging in a cycle): the slice
	// fails at once instead of paging on until it splits. Asked lazily.
	versionRepeatedToken = "repeated-next-token"

	// versionStrictMessages guards the rejection of signal payloads with
	// unknown fields, and of dead-letter signals that do not belong to the
	// workflow's platform: before it they were applied or silently
	// dropped. Asked lazily, when a payload would be rejected.
	versionStrictMessages = "strict-signal-payloads"

	// versionConfigVerdict guards how a `config` signal is judged: from this
	// version the verdict of the settings check is recorded in history (a
	// side effect), so a check made stricter later cannot change how an
	// accepted signal replays. Runs before it judge with the structural
	// check of their time (config.Platform.ValidateStructure).
	versionConfigVerdict = "config-verdict-recorded"
)
