package api

import (
	"fmt"
	"strings"
	"time"
)

// Workflow type names, as registered on workers and shown in the Web UI.
const (
	CursorWorkflowType     = "PlatformCursor"
	SliceWorkflowType      = "FetchSlice"
	DeadLetterWorkflowType = "DeadLetter"
)

// sliceTimeLayout is compact, sortable to the second and safe inside a
// workflow ID; it prints fractional seconds only when there are any
// (20261121T120000Z, 20261121T120000.5Z). sliceTimeLayoutV01 always
// printed six digits (20261121T120000.000000Z); IDs of both parse.
const (
	sliceTimeLayout    = "20060102T150405.999999Z"
	sliceTimeLayoutV01 = "20060102T150405.000000Z"
	sliceTimeParse     = "20060102T150405Z" // takes any fraction after the seconds
)

// CursorWorkflowID is the ID of a platform's long-running cursor.
func CursorWorkflowID(platform string) string { return "cursor/" + platform }

// DeadLetterWorkflowID is the ID of a platform's dead-letter workflow.
func DeadLetterWorkflowID(platform string) string { return "deadletter/" + platform }

// SliceWorkflowID is deterministic, so two starts of one slice cannot both
// run. Times are in UTC, to the microsecond.
func SliceWorkflowID(platform string, start, end time.Time) string {
	return sliceID(sliceTimeLayout, platform, start, end)
}

// SliceWorkflowIDV01 is the ID layout of releases up to v0.2, which cursors
// that started their run on v0.1's slice grid keep using until they
// continue as new (workflows/versions.go, slice-grid).
func SliceWorkflowIDV01(platform string, start, end time.Time) string {
	return sliceID(sliceTimeLayoutV01, platform, start, end)
}

func sliceID(layout, platform string, start, end time.Time) string {
	return fmt.Sprintf("slice/%s/%s-%s", platform, start.UTC().Format(layout), end.UTC().Format(layout))
}

// ParseSliceWorkflowID is the inverse of SliceWorkflowID and of
// SliceWorkflowIDV01.
func ParseSliceWorkflowID(id string) (platform string, start, end time.Time, err error) {
	rest, ok := strings.CutPrefix(id, "slice/")
	i := strings.LastIndex(rest, "/")
	if !ok || i < 0 {
		return "", start, end, fmt.Errorf("%q is not a slice workflow ID (slice/<platform>/<start>-<end>)", id)
	}
	platform = rest[:i]
	from, to, ok := strings.Cut(rest[i+1:], "-")
	if !ok {
		return "", start, end, fmt.Errorf("%q is not a slice workflow ID (slice/<platform>/<start>-<end>)", id)
	}
	if start, err = time.Parse(sliceTimeParse, from); err != nil {
		return "", start, end, fmt.Errorf("slice ID %q: start: %w", id, err)
	}
	if end, err = time.Parse(sliceTimeParse, to); err != nil {
		return "", start, end, fmt.Errorf("slice ID %q: end: %w", id, err)
	}
	return platform, start, end, nil
}
