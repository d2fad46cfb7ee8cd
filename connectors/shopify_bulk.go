package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Bulk queries (https://shopify.dev/docs/api/usage/bulk-operations/queries):
// instead of paging a wide backfill window, the connector asks Shopify to
// run the orders query for the whole window in the background
// (bulkOperationRunQuery), looks at the operation until it is COMPLETED,
// and streams the JSONL file Shopify leaves at its url. Each order is a
// line; each of its line items is a line after it with "__parentId" naming
// the order. groupObjects: true keeps an order's line items right below it
// (the default from 2026-01 is ungrouped), so an order is complete when the
// next order begins and the file streams in one pass with bounded memory.
//
// The file sits on Shopify's storage host behind a signed URL: it is
// fetched without the shop's access token, and the URL (a credential for
// the data for 7 days) is never returned to workflows; the download asks
// for the operation again and takes its URL then.

// BulkOperation is what the connector reads of a BulkOperation object.
type BulkOperation struct {
	ID          string
	Status      string // CREATED, RUNNING, CANCELING, COMPLETED, FAILED, CANCELED, EXPIRED
	ErrorCode   string // ACCESS_DENIED, INTERNAL_SERVER_ERROR, TIMEOUT
	ObjectCount int64
	// FileSize is the result file's size in bytes (0: not reported).
	FileSize int64
	// URL is the result file (COMPLETED; empty when nothing matched),
	// PartialDataURL what a FAILED operation got before it failed.
	URL, PartialDataURL string
	// Query is the bulk query document the operation runs.
	Query string
}

// Bulk operation statuses (BulkOperationStatus).
const (
	BulkCreated   = "CREATED"
	BulkRunning   = "RUNNING"
	BulkCanceling = "CANCELING"
	BulkCompleted = "COMPLETED"
	BulkFailed    = "FAILED"
	BulkCanceled  = "CANCELED"
	BulkExpired   = "EXPIRED"
)

// BulkLister is a connector that can list a window's orders as one bulk
// query. Shopify's GraphQL connector is one.
type BulkLister interface {
	// StartBulk starts the bulk query for the orders updated in [from, to).
	// When the shop already runs as many bulk queries as it allows, it
	// adopts a running operation of the same query (a start whose answer
	// was lost), else returns a *BulkBusyError.
	StartBulk(ctx context.Context, from, to time.Time, m Meter) (BulkOperation, error)
	// BulkStatus reads the operation with this id.
	BulkStatus(ctx context.Context, id string, m Meter) (BulkOperation, error)
	// CancelBulk asks Shopify to cancel the operation.
	CancelBulk(ctx context.Context, id string, m Meter) error
	// ReadBulk streams the result file at r.URL from byte r.Offset on (an
	// order's first byte: where the last attempt committed), handing
	// batches of at most r.Batch complete orders, each with all its lines,
	// to store with the offset where the next order begins.
	// It reads no more than the operation said the file holds (a
	// *BulkBoundError past it), from https URLs of public addresses only.
	ReadBulk(ctx context.Context, r BulkRead, store func(orders []Order, next int64) error) error
}

// AsBulk returns the bulk side of a connector built by New, keeping its
// errors redacted, or false when the connector cannot run bulk queries.
func AsBulk(c Connector) (BulkLister, bool) {
	if rc, ok := c.(redactingConnector); ok {
		b, ok := rc.inner.(BulkLister)
		if !ok {
			return nil, false
		}
		return redactingBulk{inner: b, conn: rc}, true
	}
	b, ok := c.(BulkLister)
	return b, ok
}

// BulkBusyError says the shop runs as many bulk queries as it allows
// (OPERATION_IN_PROGRESS, LIMIT_REACHED): ask again later.
type BulkBusyError struct {
	Platform string
	Msg      string
}

func (e *BulkBusyError) Error() string {
	return fmt.Sprintf("%s: the shop runs as many bulk queries as it allows: %s", e.Platform, e.Msg)
}

// BulkURLExpiredError is a result file whose signed URL no longer opens
// (the file host's 400/403/404/410). A fresh look at the operation gives a
// fresh URL, unless the operation itself has EXPIRED.
type BulkURLExpiredError struct {
	Platform string
	Status   int
}

func (e *BulkURLExpiredError) Error() string {
	return fmt.Sprintf("%s: the bulk result URL was refused (HTTP %d): expired or revoked", e.Platform, e.Status)
}

const (
	shopifyBulkRunOperation    = "RunBulkOrders"
	shopifyBulkStatusOperation = "BulkOperationStatus"
	shopifyBulkCurrentOp       = "CurrentBulkOrders"
	shopifyBulkCancelOperation = "CancelBulkOrders"
	shopifyBulkFields          = "id status errorCode objectCount fileSize url partialDataUrl query"

	shopifyBulkRunMutation = `mutation RunBulkOrders($query: String!) {
  bulkOperationRunQuery(query: $query, groupObjects: true) {
    bulkOperation { ` + shopifyBulkFields + ` }
    userErrors { field message code }
  }
}`
	shopifyBulkStatusQuery = `query BulkOperationStatus($id: ID!) {
  node(id: $id) { ... on BulkOperation { ` + shopifyBulkFields + ` } }
}`
	shopifyBulkCurrentQuery = `query CurrentBulkOrders {
  currentBulkOperation(type: QUERY) { ` + shopifyBulkFields + ` }
}`
	shopifyBulkListOp    = "RunningBulkOrders"
	shopifyBulkListQuery = `query RunningBulkOrders($first: Int!) {
  bulkOperations(first: $first, query: "operation_type:query AND (status:created OR status:running)", sortKey: CREATED_AT, reverse: true) {
    nodes { ` + shopifyBulkFields + ` }
  }
}`
	shopifyBulkCancelMutation = `mutation CancelBulkOrders($id: ID!) {
  bulkOperationCancel(id: $id) {
    bulkOperation { ` + shopifyBulkFields + ` }
    userErrors { field message }
  }
}`
	// Shopify's costs: a mutation 10 points, a single object 1.
	shopifyBulkMutationCost = 10
	shopifyBulkObjectCost   = 1
)

// bulkQuery is the bulk query for the orders updated in [from, to): the
// paged query's Order selection, with every connection and list whole (a
// bulk query pages nested connections itself).
func (c *shopifyGraphQL) bulkQuery(from, to time.Time) string {
	return c.fields.bulkQuery(shopifySearchWindow(from, to))
}

type shopifyBulkNode struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	ErrorCode      string `json:"errorCode"`
	ObjectCount    string `json:"objectCount"` // UnsignedInt64, a string
	FileSize       string `json:"fileSize"`    // UnsignedInt64, a string; null while running
	URL            string `json:"url"`
	PartialDataURL string `json:"partialDataUrl"`
	Query          string `json:"query"`
}

func (n *shopifyBulkNode) operation(platform string) (BulkOperation, error) {
	op := BulkOperation{ID: n.ID, Status: n.Status, ErrorCode: n.ErrorCode, URL: n.URL, PartialDataURL: n.PartialDataURL, Query: n.Query}
	if !strings.HasPrefix(n.ID, "gid://shopify/BulkOperation/") {
		return op, &MalformedError{Platform: platform, Offset: -1, Err: fmt.Errorf("bulk operation id %s is not a gid://shopify/BulkOperation/ id", snippet(n.ID))}
	}
	if n.ObjectCount != "" {
		c, err := strconv.ParseInt(n.ObjectCount, 10, 64)
		if err != nil || c < 0 {
			return op, &MalformedError{Platform: platform, Offset: -1, Err: fmt.Errorf("bulk operation objectCount %s is not a count", snippet(n.ObjectCount))}
		}
		op.ObjectCount = c
	}
	if n.FileSize != "" {
		c, err := strconv.ParseInt(n.FileSize, 10, 64)
		if err != nil || c < 0 {
			return op, &MalformedError{Platform: platform, Offset: -1, Err: fmt.Errorf("bulk operation fileSize %s is not a size", snippet(n.FileSize))}
		}
		op.FileSize = c
	}
	switch n.Status {
	case BulkCreated, BulkRunning, BulkCanceling, BulkCompleted, BulkFailed, BulkCanceled, BulkExpired:
	default:
		return op, &MalformedError{Platform: platform, Offset: -1, Err: fmt.Errorf("bulk operation status %s is none Shopify documents", snippet(n.Status))}
	}
	return op, nil
}

type shopifyUserError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// StartBulk runs bulkOperationRunQuery for the window.
func (c *shopifyGraphQL) StartBulk(ctx context.Context, from, to time.Time, m Meter) (BulkOperation, error) {
	if !from.Before(to) {
		return BulkOperation{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("bulk window start %s is not before its end %s", from, to)}
	}
	query := c.bulkQuery(from, to)
	if c.listsBulk {
		// From 2026-01 a retried start is not refused while the shop has
		// room, so an operation an earlier attempt started is looked for
		// first: starting it twice would hold two of the shop's slots.
		if op, ok, err := c.findRunning(ctx, query, m); err != nil || ok {
			return op, err
		}
	}
	body, err := c.query(ctx, PageRequest{Meter: m}, shopifyBulkRunOperation, shopifyBulkRunMutation,
		map[string]any{"query": query}, shopifyBulkMutationCost)
	if err != nil {
		return BulkOperation{}, err
	}
	var env struct {
		Data struct {
			Run *struct {
				Op         *shopifyBulkNode   `json:"bulkOperation"`
				UserErrors []shopifyUserError `json:"userErrors"`
			} `json:"bulkOperationRunQuery"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return BulkOperation{}, err
	}
	run := env.Data.Run
	if run == nil {
		return BulkOperation{}, &MalformedError{Platform: c.platform, Offset: -1, Err: errors.New("bulkOperationRunQuery is missing from the answer")}
	}
	if len(run.UserErrors) > 0 {
		ue := run.UserErrors[0]
		if ue.Code == "OPERATION_IN_PROGRESS" || ue.Code == "LIMIT_REACHED" {
			return c.adoptRunning(ctx, query, m, textclip.Line(ue.Code+": "+ue.Message))
		}
		return BulkOperation{}, &PermanentError{Platform: c.platform, Msg: "bulkOperationRunQuery refused the query: " + textclip.Line(ue.Code+": "+ue.Message)}
	}
	if run.Op == nil {
		return BulkOperation{}, &MalformedError{Platform: c.platform, Offset: -1, Err: errors.New("bulkOperationRunQuery returned neither an operation nor userErrors")}
	}
	return run.Op.operation(c.platform)
}

// adoptRunning handles a refused start: when the shop's current bulk query
// is this very query (an earlier attempt started it and its answer was
// lost), it is the slice's operation; anything else is someone else's, and
// the slice waits its turn.
func (c *shopifyGraphQL) adoptRunning(ctx context.Context, query string, m Meter, refusal string) (BulkOperation, error) {
	if c.listsBulk {
		op, ok, err := c.findRunning(ctx, query, m)
		if err != nil || ok {
			return op, err
		}
		return BulkOperation{}, &BulkBusyError{Platform: c.platform, Msg: refusal}
	}
	body, err := c.query(ctx, PageRequest{Meter: m}, shopifyBulkCurrentOp, shopifyBulkCurrentQuery, map[string]any{}, shopifyBulkObjectCost)
	if err != nil {
		return BulkOperation{}, err
	}
	var env struct {
		Data struct {
			Current *shopifyBulkNode `json:"currentBulkOperation"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return BulkOperation{}, err
	}
	if cur := env.Data.Current; cur != nil && cur.Query == query && (cur.Status == BulkCreated || cur.Status == BulkRunning) {
		return cur.operation(c.platform)
	}
	return BulkOperation{}, &BulkBusyError{Platform: c.platform, Msg: refusal}
}

// findRunning looks through the shop's running bulk queries (at most
// bulk_concurrency of them run at once) for one of this query.
func (c *shopifyGraphQL) findRunning(ctx context.Context, query string, m Meter) (BulkOperation, bool, error) {
	first := max(c.bulkLimit, 1)
	body, err := c.query(ctx, PageRequest{Meter: m}, shopifyBulkListOp, shopifyBulkListQuery, map[string]any{"first": first}, 2+first)
	if err != nil {
		return BulkOperation{}, false, err
	}
	var env struct {
		Data struct {
			List *struct {
				Nodes []shopifyBulkNode `json:"nodes"`
			} `json:"bulkOperations"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return BulkOperation{}, false, err
	}
	if env.Data.List == nil {
		return BulkOperation{}, false, &MalformedError{Platform: c.platform, Offset: -1, Err: errors.New("bulkOperations is missing from the answer")}
	}
	for _, n := range env.Data.List.Nodes {
		if n.Query == query && (n.Status == BulkCreated || n.Status == BulkRunning) {
			op, err := n.operation(c.platform)
			return op, err == nil, err
		}
	}
	return BulkOperation{}, false, nil
}

// BulkStatus reads one operation by id.
func (c *shopifyGraphQL) BulkStatus(ctx context.Context, id string, m Meter) (BulkOperation, error) {
	body, err := c.query(ctx, PageRequest{Meter: m}, shopifyBulkStatusOperation, shopifyBulkStatusQuery, map[string]any{"id": id}, shopifyBulkObjectCost)
	if err != nil {
		return BulkOperation{}, err
	}
	var env struct {
		Data struct {
			Node *shopifyBulkNode `json:"node"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return BulkOperation{}, err
	}
	if env.Data.Node == nil {
		return BulkOperation{}, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("bulk operation %s does not exist", textclip.Value(id))}
	}
	op, err := env.Data.Node.operation(c.platform)
	if err == nil && op.ID != id {
		err = &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("asked for bulk operation %s, got %s", snippet(id), snippet(op.ID))}
	}
	return op, err
}

// CancelBulk runs bulkOperationCancel. An operation that has already ended
// is not an error: there is nothing left to cancel.
func (c *shopifyGraphQL) CancelBulk(ctx context.Context, id string, m Meter) error {
	body, err := c.query(ctx, PageRequest{Meter: m}, shopifyBulkCancelOperation, shopifyBulkCancelMutation, map[string]any{"id": id}, shopifyBulkMutationCost)
	if err != nil {
		return err
	}
	var env struct {
		Data struct {
			Cancel *struct {
				Op         *shopifyBulkNode   `json:"bulkOperation"`
				UserErrors []shopifyUserError `json:"userErrors"`
			} `json:"bulkOperationCancel"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return err
	}
	if env.Data.Cancel == nil || env.Data.Cancel.Op != nil || len(env.Data.Cancel.UserErrors) == 0 {
		return nil
	}
	op, err := c.BulkStatus(ctx, id, m)
	if err != nil {
		return err
	}
	switch op.Status {
	case BulkCompleted, BulkFailed, BulkCanceled, BulkExpired, BulkCanceling:
		return nil
	}
	return &TransientError{Platform: c.platform, Msg: "bulkOperationCancel: " + textclip.Line(env.Data.Cancel.UserErrors[0].Message)}
}

// BulkRead is one read of a result file: where to start, and what the
// operation said the file holds, which bounds what is read.
type BulkRead struct {
	URL string
	// Offset is the byte where an order begins (where the last attempt
	// committed); Objects is how many objects (orders and line items) the
	// file holds before it.
	Offset  int64
	Objects int64
	// Batch is the most orders handed to store at once.
	Batch int
	// ObjectCount and FileSize are the operation's objectCount and
	// fileSize (0: not reported). The file may hold no more: a longer one
	// is not the operation's result.
	ObjectCount, FileSize int64
	// Beat, when set, is called about once a second while the file is
	// read (the activity heartbeats), also while no batch completes.
	Beat func()
}

// Bounds of one bulk result read (design.md, Security boundaries: every
// read of a platform's response is bounded). What the operation reports
// (objectCount, fileSize) bounds the file; these bound what it cannot.
const (
	// maxBulkLine bounds one JSONL line: an order or a line item is a few KB.
	maxBulkLine = 4 << 20
	// maxBulkOrderLines bounds an order's line items, as the paged query
	// does (maxShopifyLinePages follow-ups of shopifyLinesFollowUp lines):
	// they are held until the order is complete.
	maxBulkOrderLines = maxShopifyLinePages * shopifyLinesFollowUp
	// maxBulkOrderBytes bounds an order with all its lines in memory, and
	// maxBulkBatchBytes a batch's orders: a batch goes to the store early
	// once its orders take that much.
	maxBulkOrderBytes = 64 << 20
	maxBulkBatchBytes = 64 << 20
	// maxBulkBlankLines bounds empty lines (Shopify writes none): they
	// carry no object, so objectCount does not bound them.
	maxBulkBlankLines = 1000
	// maxBulkObjects and maxBulkBytes are the hard caps when the operation
	// reports no count or size, and on what it reports: several times a
	// 30-day slice (backfill_max_span) of a shop with 100,000 orders a day.
	maxBulkObjects = 50_000_000
	maxBulkBytes   = 64 << 30
	// maxBulkRedirects bounds the storage host's redirects.
	maxBulkRedirects = 5
)

// A read calls BulkRead.Beat every bulkBeatEvery, and every
// bulkBeatLines lines (the SDK throttles what it sends).
const (
	bulkBeatEvery = time.Second
	bulkBeatLines = 10_000
)

// BulkBoundError is a result file larger than the operation said, or than
// a bulk result may be: not the operation's result, so it is not read on
// (and not retried; the slice pages instead).
type BulkBoundError struct {
	Platform string
	Offset   int64
	Msg      string
}

func (e *BulkBoundError) Error() string {
	return fmt.Sprintf("%s: bulk result refused at byte %d: %s", e.Platform, e.Offset, e.Msg)
}

// ReadBulk streams the result file. Its requests carry no credential: the
// URL is signed. From offset on it asks for a byte range and, should the
// host ignore the range, skips what it already has.
func (c *shopifyGraphQL) ReadBulk(ctx context.Context, r BulkRead, store func([]Order, int64) error) error {
	if r.Batch < 1 {
		r.Batch = 1
	}
	lim := bulkLimits{objects: maxBulkObjects, bytes: maxBulkBytes}
	if r.ObjectCount > 0 {
		lim.objects = min(lim.objects, r.ObjectCount)
	}
	if r.FileSize > 0 {
		lim.bytes = min(lim.bytes, r.FileSize)
	}
	if r.ObjectCount > maxBulkObjects || r.FileSize > maxBulkBytes {
		return &BulkBoundError{Platform: c.platform, Offset: r.Offset, Msg: fmt.Sprintf(
			"the operation reports %d objects in %d bytes, more than a bulk result may hold (%d objects, %d bytes)",
			r.ObjectCount, r.FileSize, maxBulkObjects, maxBulkBytes)}
	}
	if err := checkBulkURL(c.files, r.URL); err != nil {
		return &PermanentError{Platform: c.platform, Msg: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return &PermanentError{Platform: c.platform, Msg: "the bulk result URL does not parse"}
	}
	req.Header.Set("User-Agent", userAgent)
	if r.Offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(r.Offset, 10)+"-")
	}
	resp, err := c.files.Do(req)
	if err != nil {
		var refused *bulkAddressError
		if errors.As(err, &refused) {
			return &PermanentError{Platform: c.platform, Msg: refused.Error()}
		}
		return &TransientError{Platform: c.platform, Msg: "bulk result download failed", Err: scrubURLError(err)}
	}
	defer func() { _ = resp.Body.Close() }()
	offset := r.Offset
	switch {
	case resp.StatusCode == http.StatusPartialContent:
	case resp.StatusCode == http.StatusOK:
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil {
			return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("bulk result ended before byte %d, where the last attempt stopped", offset), Err: scrubURLError(err)}
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		return nil // the last attempt stored the whole file
	case resp.StatusCode == 400 || resp.StatusCode == 403 || resp.StatusCode == 404 || resp.StatusCode == 410:
		return &BulkURLExpiredError{Platform: c.platform, Status: resp.StatusCode}
	case resp.StatusCode >= 500 || resp.StatusCode == 429:
		return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("bulk result download: HTTP %d", resp.StatusCode)}
	default:
		return &PermanentError{Platform: c.platform, Status: resp.StatusCode, Msg: "bulk result download refused"}
	}
	rd := &bulkReader{c: c, lim: lim, objects: r.Objects, beat: r.Beat}
	return rd.read(resp.Body, offset, r.Batch, store)
}

// scrubURLError keeps the signed URL out of an error: net/http quotes it.
func scrubURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && strings.Contains(err.Error(), "://") {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// bulkLimits is what one read may take from the file start on.
type bulkLimits struct {
	objects int64
	bytes   int64
}

// bulkOrder is an order being read: its node and raw line, and its lines.
type bulkOrder struct {
	node     shopifyNode
	raw      json.RawMessage
	lines    []shopifyLine
	children map[string][]json.RawMessage // by connection, __parentId removed
	bytes    int64                        // of its lines, raw line included
	at       int64                        // byte offset of its first line
}

// bulkReader reads one result file.
type bulkReader struct {
	c       *shopifyGraphQL
	lim     bulkLimits
	objects int64 // read so far, the ones before the read's offset included
	blank   int
	beat    func()
	beatAt  time.Time
	lines   int // since the last beat
}

// snippet is untrusted file content as it may appear in an error: short,
// quoted, every control or non-ASCII character escaped.
func snippet(s string) string {
	const most = 40
	if r := []rune(s); len(r) > most {
		return strconv.QuoteToASCII(string(r[:most])) + "…"
	}
	return strconv.QuoteToASCII(s)
}

// read reads orders with their child lines, handing complete orders to
// store in batches.
func (rd *bulkReader) read(r io.Reader, offset int64, batch int, store func([]Order, int64) error) error {
	c := rd.c
	br := bufio.NewReaderSize(r, 64<<10)
	pos := offset
	var cur *bulkOrder
	var pending []Order
	var pendingBytes int64
	bad := func(at int64, err error) error {
		return &MalformedError{Platform: c.platform, Offset: at, Err: fmt.Errorf("bulk result: %w", err)}
	}
	bound := func(at int64, format string, args ...any) error {
		return &BulkBoundError{Platform: c.platform, Offset: at, Msg: fmt.Sprintf(format, args...)}
	}
	finish := func() error {
		if cur == nil {
			return nil
		}
		n := cur.node
		n.LineItems = &struct {
			Nodes    []shopifyLine   `json:"nodes"`
			PageInfo shopifyPageInfo `json:"pageInfo"`
		}{Nodes: cur.lines}
		o, _, err := c.order(n, cur.raw)
		if err == nil {
			o.Raw, err = c.fields.assemble(cur.raw, cur.children)
		}
		if err != nil {
			return bad(cur.at, err)
		}
		pending = append(pending, o)
		pendingBytes += cur.bytes
		cur = nil
		return nil
	}
	flush := func(next int64) error {
		if len(pending) == 0 {
			return nil
		}
		err := store(pending, next)
		pending, pendingBytes = nil, 0
		return err
	}
	for {
		if rd.beat != nil {
			rd.lines++
			if now := time.Now(); rd.lines >= bulkBeatLines || now.Sub(rd.beatAt) >= bulkBeatEvery {
				rd.beatAt, rd.lines = now, 0
				rd.beat()
			}
		}
		line, err := readLine(br)
		if err != nil && err != io.EOF {
			// The connection broke: the line read last is not whole.
			return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("bulk result download broke off at byte %d", pos), Err: scrubURLError(err)}
		}
		if len(line) > 0 {
			at := pos
			pos += int64(len(line))
			if pos > rd.lim.bytes {
				return bound(at, "the file runs past %d bytes (the operation's fileSize, or the most a bulk result may hold)", rd.lim.bytes)
			}
			text := bytes.TrimSpace(line)
			if len(text) > maxBulkLine {
				return bound(at, "a line of more than %d bytes", maxBulkLine)
			}
			if len(text) == 0 {
				if rd.blank++; rd.blank > maxBulkBlankLines {
					return bound(at, "more than %d empty lines", maxBulkBlankLines)
				}
			} else {
				if rd.objects++; rd.objects > rd.lim.objects {
					return bound(at, "the file holds more than %d objects (the operation's objectCount, or the most a bulk result may hold)", rd.lim.objects)
				}
				var probe struct {
					ID       string `json:"id"`
					ParentID string `json:"__parentId"`
					Typename string `json:"__typename"`
				}
				if jerr := json.Unmarshal(text, &probe); jerr != nil {
					if err == io.EOF && !bytes.HasSuffix(line, []byte("\n")) {
						return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("bulk result cut off at byte %d", at)}
					}
					return bad(at, jerr)
				}
				switch {
				case probe.ParentID == "" && strings.HasPrefix(probe.ID, shopifyOrderGIDPrefix):
					if ferr := finish(); ferr != nil {
						return ferr
					}
					if len(pending) >= batch || pendingBytes >= maxBulkBatchBytes {
						if ferr := flush(at); ferr != nil {
							return ferr
						}
					}
					cur = &bulkOrder{raw: append(json.RawMessage(nil), text...), at: at, bytes: int64(len(text))}
					if jerr := json.Unmarshal(text, &cur.node); jerr != nil {
						return bad(at, describeFieldError(jerr))
					}
				case probe.ParentID != "":
					if cur == nil || probe.ParentID != cur.node.ID {
						return bad(at, fmt.Errorf("line item %s names parent %s, not the order before it (grouped output expected)", snippet(probe.ID), snippet(probe.ParentID)))
					}
					if len(cur.lines) >= maxBulkOrderLines {
						return bound(at, "order %s has more than %d line items", snippet(cur.node.ID), maxBulkOrderLines)
					}
					if cur.bytes += int64(len(text)); cur.bytes > maxBulkOrderBytes {
						return bound(at, "order %s takes more than %d bytes with its line items", snippet(cur.node.ID), maxBulkOrderBytes)
					}
					field := c.fields.childConnection(probe.Typename, probe.ID)
					if field == "" {
						return bad(at, fmt.Errorf("child row %s of type %s belongs to no connection the query selects", snippet(probe.ID), snippet(probe.Typename)))
					}
					child, jerr := withoutParent(text)
					if jerr != nil {
						return bad(at, describeFieldError(jerr))
					}
					if cur.children == nil {
						cur.children = map[string][]json.RawMessage{}
					}
					cur.children[field] = append(cur.children[field], child)
					if field == "lineItems" {
						var sl shopifyLine
						if jerr := json.Unmarshal(text, &sl); jerr != nil {
							return bad(at, describeFieldError(jerr))
						}
						cur.lines = append(cur.lines, sl)
					}
				default:
					return bad(at, fmt.Errorf("an object %s that is neither an order nor an order's line item", snippet(probe.ID)))
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	if err := finish(); err != nil {
		return err
	}
	return flush(pos)
}

// readLine reads one line, newline included; io.EOF with the last one. A
// line longer than maxBulkLine is returned as soon as it is, for the
// caller to refuse.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if err == bufio.ErrBufferFull {
			if len(out) > maxBulkLine {
				return out, nil // reported by the caller
			}
			continue
		}
		return out, err
	}
}

const shopifyOrderGIDPrefix = "gid://shopify/Order/"

// redactingBulk scrubs the platform's secrets from bulk errors, as
// redactingConnector does for pages.
type redactingBulk struct {
	inner BulkLister
	conn  redactingConnector
}

func (b redactingBulk) scrub(err error) error {
	if err == nil {
		return err
	}
	return redactError(err, b.conn.replacer())
}

func (b redactingBulk) StartBulk(ctx context.Context, from, to time.Time, m Meter) (BulkOperation, error) {
	op, err := b.inner.StartBulk(ctx, from, to, m)
	return op, b.scrub(err)
}

func (b redactingBulk) BulkStatus(ctx context.Context, id string, m Meter) (BulkOperation, error) {
	op, err := b.inner.BulkStatus(ctx, id, m)
	return op, b.scrub(err)
}

func (b redactingBulk) CancelBulk(ctx context.Context, id string, m Meter) error {
	return b.scrub(b.inner.CancelBulk(ctx, id, m))
}

func (b redactingBulk) ReadBulk(ctx context.Context, r BulkRead, store func([]Order, int64) error) error {
	return b.scrub(b.inner.ReadBulk(ctx, r, store))
}

// Result files are fetched from wherever the platform's answer points, so
// the platform (or whoever answers in its name) chooses the address: the
// file client goes only over https, never to a loopback, private,
// link-local, unspecified or otherwise non-public address, and checks the
// address it dials (after DNS, for the first request and every redirect),
// so neither a name that resolves to 127.0.0.1 nor a redirect reaches the
// worker's own network. The one exception is options.bulk_loopback_http, for
// a simulator on loopback serving its own result files: plain http and
// loopback addresses, to the platform endpoint's port only.

// bulkAddressError is a result URL or address the file client refuses.
type bulkAddressError struct {
	what   string // the host, or the dialed address
	reason string
}

func (e *bulkAddressError) Error() string {
	return fmt.Sprintf("bulk result URL refused: %s %s (result files are fetched only over https from public addresses)", snippet(e.what), e.reason)
}

// bulkAddressGuard says which addresses the file client may reach.
type bulkAddressGuard struct {
	// loopbackPort is the platform endpoint's port when
	// options.bulk_loopback_http allows it, else "".
	loopbackPort string
}

// nonPublic are the IPv4 and IPv6 ranges netip's predicates do not name:
// "this network", shared address space (CGNAT), IETF protocol
// assignments, benchmarking, reserved and limited broadcast, NAT64 and
// documentation ranges.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48", "2001:db8::/32", "100::/64"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// refuse says why ip may not be reached, or "" when it may.
func (g bulkAddressGuard) refuse(ip netip.Addr, port string) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "is no address"
	case ip.IsLoopback():
		if g.loopbackPort != "" && port == g.loopbackPort {
			return ""
		}
		return "is a loopback address"
	case ip.IsUnspecified():
		return "is the unspecified address"
	case ip.IsPrivate():
		return "is a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "is a link-local address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "is a multicast address"
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return "is not a public address"
		}
	}
	return ""
}

// control runs before every connection is made, on the address DNS gave.
func (g bulkAddressGuard) control(_, address string, _ syscall.RawConn) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return &bulkAddressError{what: address, reason: "is no host and port"}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &bulkAddressError{what: address, reason: "is no IP address"}
	}
	if why := g.refuse(ip, port); why != "" {
		return &bulkAddressError{what: address, reason: why}
	}
	return nil
}

// checkURL refuses a URL before a request: its scheme, and its host when
// it is an address (names are checked when dialed).
func (g bulkAddressGuard) checkURL(u *url.URL) error {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.loopbackPort != "" && port == g.loopbackPort && loopbackName(u.Hostname()):
	default:
		return &bulkAddressError{what: u.Scheme + "://" + u.Host, reason: "is not https"}
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := g.refuse(ip, port); why != "" {
			return &bulkAddressError{what: u.Host, reason: why}
		}
	}
	return nil
}

func loopbackName(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// checkBulkURL checks a result URL with the client's guard.
func checkBulkURL(c *http.Client, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the bulk result URL does not parse")
	}
	if t, ok := c.Transport.(*bulkFileTransport); ok {
		return t.guard.checkURL(u)
	}
	return nil
}

// bulkFileTransport is the file client's transport: the guarded dialer,
// and an idle bound on the body, so a host that stops sending is given
// up after the platform's timeout instead of holding the download (and,
// without heartbeats, hiding it) until its start-to-close timeout.
type bulkFileTransport struct {
	base  *http.Transport
	guard bulkAddressGuard
	idle  time.Duration
}

func (t *bulkFileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.guard.checkURL(req.URL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &idleBody{body: resp.Body, cancel: cancel, idle: t.idle, timer: time.AfterFunc(t.idle, cancel)}
	return resp, nil
}

// idleBody cancels its request when no byte arrives for idle.
type idleBody struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	idle   time.Duration
	timer  *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF && !b.timer.Stop() {
		err = fmt.Errorf("no data for %s: %w", b.idle, err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel()
	return err
}

// newBulkFileClient is the client for result files: no credential, no
// cookies, no proxy (the guard checks the address it dials), the
// platform's timeout for the connection, the headers and each wait for
// body bytes (a large file takes longer than one request; the activity's
// heartbeat timeout catches a stalled worker).
func newBulkFileClient(p config.Platform, opts ShopifyOptions) *http.Client {
	timeout := p.Timeout.D()
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	var guard bulkAddressGuard
	if opts.BulkLoopbackHTTP {
		if u, err := url.Parse(p.Endpoint); err == nil && loopbackName(u.Hostname()) {
			guard.loopbackPort = u.Port()
			if guard.loopbackPort == "" {
				guard.loopbackPort = map[string]string{"https": "443", "http": "80"}[u.Scheme]
			}
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: guard.control}).DialContext
	tr.ResponseHeaderTimeout = timeout
	return &http.Client{
		Transport: &bulkFileTransport{base: tr, guard: guard, idle: timeout},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxBulkRedirects {
				return fmt.Errorf("more than %d redirects", maxBulkRedirects)
			}
			return guard.checkURL(req.URL)
		},
	}
}
