package workflows

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

// entryOverhead must bound what an entry's JSON holds besides its strings,
// or the dead-letter budget would not hold: the widest timestamps and
// counts, reprocessing set, an automatic retry scheduled.
func TestEntrySizeBoundsTheEntrysJSON(t *testing.T) {
	ts := time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -(12*3600+59*60)))
	platform := strings.Repeat("p", 63)
	e := api.DeadLetterEntry{
		SliceID: api.SliceWorkflowID(platform, ts, ts.Add(time.Hour)), Platform: platform, Start: ts, End: ts,
		Error: "e\u0001<", ErrorType: "Transient", Attempts: math.MaxInt, Failures: math.MaxInt,
		FirstFailedAt: ts, LastFailedAt: ts, Reprocessing: true, NextRetryAt: ts, AutoRetries: math.MaxInt,
	}
	b, err := json.Marshal(e)
	require.NoError(t, err)
	require.GreaterOrEqual(t, entrySize(e), len(b))
	// 1,000 entries, their errors shortened, fit the budget.
	e.Error, e.ErrorType = strings.Repeat("\u0001", shortEntryError), strings.Repeat("t", shortEntryErrorType)
	d := &deadLetter{}
	for range maxDeadLetterEntries {
		d.entries = append(d.entries, e)
	}
	d.bound()
	total := 0
	for _, e := range d.entries {
		total += entrySize(e)
	}
	require.LessOrEqual(t, total, deadLetterBudget)
}
