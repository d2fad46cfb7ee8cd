package cli

import (
	"regexp"
	"strings"
)

// Errors from slices carry their context first ("slice <id> dead-lettered:
// fetch page 1 of <id>: <platform>: HTTP 401: ..."), which is what a log
// line needs, but a table column clipped to a few dozen characters then
// shows only the slice ID it already has in another column. causeFirst
// moves the cause to the front and keeps the page as a suffix.
var (
	slicePrefix = regexp.MustCompile(`^slice (slice/\S+?)(?: dead-lettered)?: `)
	pagePrefix  = regexp.MustCompile(`^fetch page (\d+) of slice/\S+?: `)
)

// causeFirst rewrites a slice error so its cause comes first:
// "HTTP 401: invalid or missing bearer token (page 1)". Other text passes
// unchanged but for the platform's name as a prefix.
func causeFirst(msg, platform string) string {
	msg = slicePrefix.ReplaceAllString(msg, "")
	page := ""
	if m := pagePrefix.FindStringSubmatch(msg); m != nil {
		page = " (page " + m[1] + ")"
		msg = msg[len(m[0]):]
	}
	if platform != "" {
		msg = strings.TrimPrefix(msg, platform+": ")
	}
	return msg + page
}
