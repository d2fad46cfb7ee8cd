package connectors

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// refetchNotFound is GetOrder's answer for an id the platform does not
// know: it wraps ErrOrderNotFound, so the refetch reports it instead of
// retrying.
func refetchNotFound(platform, id string) error {
	return fmt.Errorf("%s: order %s: %w", platform, textclip.Value(id), ErrOrderNotFound)
}

// orderPath is base with the order id appended as one escaped path
// segment: an id holding "/" or "?" stays inside its segment and cannot
// reach another route of the platform.
func orderPath(base, id string) string {
	return strings.TrimRight(base, "/") + "/" + pathSegment(id)
}

// pathSegment escapes id as one path segment. url.PathEscape leaves "."
// alone, so an id of "." or ".." would walk up the platform's routes once
// a client or proxy cleans the path: those are escaped by hand.
func pathSegment(id string) string {
	if id == "." || id == ".." {
		return strings.ReplaceAll(id, ".", "%2E")
	}
	return url.PathEscape(id)
}

// checkGetID refuses an empty id before anything is sent: "GET .../orders/"
// would ask the list route instead.
func checkGetID(platform, id string) error {
	if strings.TrimSpace(id) == "" {
		return &PermanentError{Platform: platform, Msg: "get one order: the order id is empty"}
	}
	return nil
}

// is404 reports whether a get-one call was answered 404 Not Found.
func is404(resp *resty.Response) bool { return resp.StatusCode() == http.StatusNotFound }
