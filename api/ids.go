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

// sliceTimeLayout is compact, sortable and safe inside a workflow ID.
const sliceTimeLayout = "20060102T150405.000000Z"

// CursorWorkflowID is the ID of a platform's long-running cursor.
func CursorWorkflowID(platform string) string { return "cursor/" + platform }

// DeadLetterWorkflowID is the ID of a platform's dead-letter workflow.
func DeadLetterWorkflowID(platform string) string { return "deadletter/" + platform }

// SliceWorkflowID is deterministic, so two starts of one slice cannot both run.
func SliceWorkflowID(platform string, start, end time.Time) string {
	return fmt.Sprintf("slice/%s/%s-%s", platform, start.UTC().Format(sliceTimeLayout), end.UTC().Format(sliceTimeLayout))
}

// ParseSliceWorkflowID is the inverse of SliceWorkflowID.
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
	if start, err = time.Parse(sliceTimeLayout, from); err != nil {
		return "", start, end, fmt.Errorf("slice ID %q: start: %w", id, err)
	}
	if end, err = time.Parse(sliceTimeLayout, to); err != nil {
		return "", start, end, fmt.Errorf("slice ID %q: end: %w", id, err)
	}
	return platform, start, end, nil
}
