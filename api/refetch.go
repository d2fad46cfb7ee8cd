package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RefetchWorkflowType is the registered name of the Refetch workflow: one
// order fetched now through its platform's get-one-order call.
const RefetchWorkflowType = "Refetch"

// Refetch priorities are Temporal task priority keys: 1 is served first, 5
// last; tasks without one (every cursor, slice and backfill page) count as
// 3. A refetch asks for RefetchDefaultPriority unless told otherwise, so it
// passes the backfill queued on its platform's task queue.
const (
	RefetchMinPriority     = 1
	RefetchMaxPriority     = 5
	RefetchDefaultPriority = 2
	// BackfillPriority is the priority key of every task without one.
	BackfillPriority = 3
)

// MaxRefetchOrderIDBytes bounds an order id a refetch takes: the store's
// bound on an id (store.MaxOrderIDBytes).
const MaxRefetchOrderIDBytes = 1024

// maxIDInWorkflowID is the longest order id a refetch workflow ID carries
// as it is; a longer one is carried by digest, so the ID stays within
// Temporal's 1,000-byte limit on workflow IDs.
const maxIDInWorkflowID = 512

// ErrBadOrderID is wrapped by CheckRefetchOrderID.
var ErrBadOrderID = errors.New("bad order id")

// CheckRefetchOrderID refuses an order id that no platform hands out and
// that would make a confusing workflow ID: empty, longer than
// MaxRefetchOrderIDBytes, not UTF-8, or with control characters or
// surrounding spaces. The error quotes the id clipped.
func CheckRefetchOrderID(id string) error {
	why := ""
	switch {
	case id == "":
		why = "is empty"
	case len(id) > MaxRefetchOrderIDBytes:
		why = fmt.Sprintf("is %d bytes long, more than %d", len(id), MaxRefetchOrderIDBytes)
	case !utf8.ValidString(id):
		why = "is not UTF-8"
	case strings.TrimSpace(id) != id:
		why = "starts or ends with a space"
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		why = "holds a control character"
	default:
		return nil
	}
	shown := id
	if len(shown) > 64 {
		shown = strings.ToValidUTF8(shown[:64], "") + "..."
	}
	return fmt.Errorf("order id %q %s: %w", shown, why, ErrBadOrderID)
}

// RefetchWorkflowID is the ID of the refetch of one order:
// refetch/<platform>/<order id>, so a second request for an order whose
// refetch is in flight joins it instead of fetching twice. An id longer
// than 512 bytes is named by its SHA-256 (refetch/<platform>/sha256:<hex>).
func RefetchWorkflowID(platform, orderID string) string {
	if len(orderID) > maxIDInWorkflowID {
		sum := sha256.Sum256([]byte(orderID))
		orderID = "sha256:" + hex.EncodeToString(sum[:])
	}
	return "refetch/" + platform + "/" + orderID
}

// RefetchInput starts a Refetch workflow: the platform by reference
// (Settings: name, task queue, tuning; identity stays in the registry),
// the order's id and the priority its tasks carry. No order data.
type RefetchInput struct {
	Platform Settings `json:"platform"`
	OrderID  string   `json:"order_id"`
	// Priority is the Temporal priority key of the refetch's tasks (1-5;
	// 0 means RefetchDefaultPriority).
	Priority int `json:"priority,omitempty"`
}

// Refetch outcomes.
const (
	// RefetchCreated: the store did not know the order; it is stored now.
	RefetchCreated = "created"
	// RefetchUpdated: a newer (or different) version is stored now.
	RefetchUpdated = "updated"
	// RefetchUnchanged: the platform's version is the stored one (or older).
	RefetchUnchanged = "unchanged"
	// RefetchNotFound: the platform has no order with the id.
	RefetchNotFound = "not_found"
	// RefetchRejected: the platform's order cannot be stored (no
	// updated_at, text the store refuses, another id than asked).
	RefetchRejected = "rejected"
	// RefetchFutureStamped: the platform's version is stamped further in
	// the future than the allowed skew, and set aside as a page would.
	RefetchFutureStamped = "future_stamped"
)

// RefetchSignalAgain asks a running Refetch workflow to fetch its order
// once more after the fetch in flight: a webhook event (package webhooks)
// that arrives while the order is being fetched may describe a change that
// fetch missed. It is sent with signal-with-start, so with no refetch
// running it starts one; any number of signals received during one fetch
// cause one more. No payload.
const RefetchSignalAgain = "again"

// RefetchResult is what a Refetch workflow reports: the outcome and
// counts, never order data.
type RefetchResult struct {
	Platform string `json:"platform"`
	OrderID  string `json:"order_id"`
	Outcome  string `json:"outcome"`
	// Reason says why for rejected, in the store's words (never the
	// order's content).
	Reason string `json:"reason,omitempty"`
	// Waits counts the waits for the platform's rate (request slots,
	// points, 429 answers) before the call went through.
	Waits int `json:"waits,omitempty"`
	// Attempts counts the activity attempts that failed and were retried.
	Attempts int `json:"attempts,omitempty"`
	// Fetches counts the fetches when RefetchSignalAgain made more than
	// one (0 otherwise); the outcome is the last one's.
	Fetches int `json:"fetches,omitempty"`
}

// ErrRefetchFailed is the application error type of a Refetch workflow
// that gave up: a permanent error (credentials, a kind without a
// get-one-order call) or its retries exhausted.
const ErrRefetchFailed = "RefetchFailed"
