package sim

import (
	"bytes"
	"compress/gzip"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bulk operations on the Shopify surface
// (https://shopify.dev/docs/api/usage/bulk-operations/queries), played with
// the operations ordersync's connector sends, recognised by name:
//
//   - RunBulkOrders($query): bulkOperationRunQuery of an orders query
//     filtered by updated_at (the same search syntax as the paged query)
//     with its lineItems. The job runs ShopifyBulk.Duration (plus PerOrder
//     for each order in the window) on the simulator's clock; a share
//     ShopifyBulk.FailRate of jobs ends FAILED (INTERNAL_SERVER_ERROR) with
//     a partialDataUrl holding the first part of the result. A shop runs at
//     most ShopifyBulk.Concurrency jobs at once (0: as Shopify, one before
//     API 2026-01 with OPERATION_IN_PROGRESS, five from 2026-01 with
//     LIMIT_REACHED).
//   - BulkOperationStatus($id): node(id:) on a BulkOperation.
//   - CurrentBulkOrders: currentBulkOperation(type: QUERY), the newest job.
//   - CancelBulkOrders($id): bulkOperationCancel.
//
// A result is JSONL: each order a line, each of its line items a line with
// "__parentId"; with groupObjects: true the items follow their order,
// without it they all come after the orders (as Shopify leaves ungrouped
// output in no particular order). Result URLs are signed and open for
// ShopifyBulk.URLTTL (each look at the job signs a fresh one); the job
// turns EXPIRED ShopifyBulk.ResultTTL after it ended. A share
// ShopifyBulk.DropRate of downloads breaks off halfway. Range requests are
// served, as a storage host does.
//
// ShopifyBulk.Hostile plays the worst cases a probe of the connector found
// (issue 24), on the real HTTP path: files without end (more line items of
// one order, more orders, blank lines, a gzip bomb), an objectCount that
// lies, a result URL that points at, or redirects to, ShopifyBulk.Target
// (say a metadata service on loopback), a body that stalls, and a job
// that never completes. Endless files end after ShopifyBulk.EndlessBytes,
// so a client that never stops reading still ends.

// Hostile bulk behaviours (BulkConfig.Hostile).
const (
	// BulkEndlessLines: the first order, then line items of it without
	// end; objectCount and fileSize claim a file large enough for them.
	BulkEndlessLines = "endless_lines"
	// BulkEndlessOrders: the result, then distinct orders without end;
	// objectCount is the result's, and no fileSize is reported.
	BulkEndlessOrders = "endless_orders"
	// BulkCountLie: the result, with objectCount half its objects.
	BulkCountLie = "count_lie"
	// BulkGzipBomb: the result, then newlines without end, served with
	// Content-Encoding: gzip (a few KB on the wire per GB); fileSize and
	// objectCount are the result's.
	BulkGzipBomb = "gzip_bomb"
	// BulkBlankLines: the result, then newlines without end; no fileSize.
	BulkBlankLines = "blank_lines"
	// BulkRedirect: the signed URL answers 302 to Target.
	BulkRedirect = "redirect"
	// BulkForeignURL: the operation's url is Target.
	BulkForeignURL = "foreign_url"
	// BulkStall: the first half of the result, then nothing, with the
	// connection held open until the client goes.
	BulkStall = "stall"
	// BulkNeverCompletes: the job stays RUNNING however long it is asked.
	BulkNeverCompletes = "never_completes"
)

var bulkHostile = map[string]bool{"": true, BulkEndlessLines: true, BulkEndlessOrders: true, BulkCountLie: true,
	BulkGzipBomb: true, BulkBlankLines: true, BulkRedirect: true, BulkForeignURL: true, BulkStall: true, BulkNeverCompletes: true}

// BulkConfig plays Shopify's bulk operations.
type BulkConfig struct {
	// Duration is how long a job runs at least (default 2s).
	Duration time.Duration `json:"duration"`
	// PerOrder is added for each order of the job's window.
	PerOrder time.Duration `json:"per_order"`
	// FailRate is the share of jobs that end FAILED with partial data.
	FailRate float64 `json:"fail_rate"`
	// DropRate is the share of result downloads cut off halfway.
	DropRate float64 `json:"drop_rate"`
	// URLTTL is how long a signed result URL opens (default 1h).
	URLTTL time.Duration `json:"url_ttl"`
	// ResultTTL is how long after it ended a job's result stays (default
	// 7 days, as Shopify's); then the job is EXPIRED.
	ResultTTL time.Duration `json:"result_ttl"`
	// Concurrency caps a shop's running jobs; 0 follows the API version.
	Concurrency int `json:"concurrency"`
	// Hostile is one of the Bulk* hostile behaviours, "" for none.
	Hostile string `json:"hostile"`
	// Target is where BulkRedirect and BulkForeignURL send the client.
	Target string `json:"target"`
	// EndlessBytes ends an endless file (default 1 GiB).
	EndlessBytes int64 `json:"endless_bytes"`
}

func (b BulkConfig) validate() error {
	if b.Duration < 0 || b.PerOrder < 0 || b.URLTTL < 0 || b.ResultTTL < 0 || b.Concurrency < 0 || b.EndlessBytes < 0 {
		return fmt.Errorf("ShopifyBulk durations, Concurrency and EndlessBytes must not be negative")
	}
	if !bulkHostile[b.Hostile] {
		return fmt.Errorf("ShopifyBulk Hostile %q is none the simulator plays", b.Hostile)
	}
	if (b.Hostile == BulkRedirect || b.Hostile == BulkForeignURL) && b.Target == "" {
		return fmt.Errorf("ShopifyBulk Hostile %q needs a Target URL", b.Hostile)
	}
	for _, r := range []float64{b.FailRate, b.DropRate} {
		if r < 0 || r > 1 || r != r {
			return fmt.Errorf("ShopifyBulk FailRate and DropRate must be in [0,1], got %v and %v", b.FailRate, b.DropRate)
		}
	}
	return nil
}

func (b BulkConfig) withDefaults() BulkConfig {
	if b.Duration == 0 {
		b.Duration = 2 * time.Second
	}
	if b.URLTTL == 0 {
		b.URLTTL = time.Hour
	}
	if b.ResultTTL == 0 {
		b.ResultTTL = 7 * 24 * time.Hour
	}
	if b.EndlessBytes == 0 {
		b.EndlessBytes = 1 << 30
	}
	return b
}

const (
	shopifyBulkRunOp    = "RunBulkOrders"
	shopifyBulkStatusOp = "BulkOperationStatus"
	shopifyBulkCurrent  = "CurrentBulkOrders"
	shopifyBulkCancelOp = "CancelBulkOrders"
	shopifyBulkListOp   = "RunningBulkOrders"
	shopifyBulkGID      = "gid://shopify/BulkOperation/"
)

func isShopifyBulkOp(op string) bool {
	switch op {
	case shopifyBulkRunOp, shopifyBulkStatusOp, shopifyBulkCurrent, shopifyBulkCancelOp, shopifyBulkListOp:
		return true
	}
	return false
}

// bulkJob is one bulk operation of a shop.
type bulkJob struct {
	id         int
	query      string
	lo, hi     int64 // the window, µs
	grouped    bool
	created    int64
	ends       int64 // µs when it is done
	fail       bool
	failAt     float64 // share of the result a failed job got
	canceledAt int64
	ended      bool
	endedAt    int64
	status     string
	data       []byte // the result (COMPLETED) or the partial data (FAILED)
	objects    int64
	sel        []gqlSel // the Order node's selection
}

var bulkOrdersSearch = regexp.MustCompile(`orders\(\s*query:\s*("(?:[^"\\]|\\.)*")`)

// bulkRequest is a parsed bulk operation request.
type bulkRequest struct {
	query   string
	sel     []gqlSel
	grouped bool
	id      int
}

func parseShopifyBulk(op, query string, vars map[string]any) (shopifyRequest, *shopifyAnswer) {
	fail := func(code, format string, args ...any) (shopifyRequest, *shopifyAnswer) {
		a := shopifyErrors(code, format, args...)
		return shopifyRequest{}, &a
	}
	req := shopifyRequest{op: op, cost: 1}
	switch op {
	case shopifyBulkRunOp, shopifyBulkCancelOp:
		req.cost = 10
	}
	switch op {
	case shopifyBulkRunOp:
		q, _ := vars["query"].(string)
		m := bulkOrdersSearch.FindStringSubmatch(q)
		if m == nil || !strings.Contains(q, "lineItems") {
			return fail("BAD_REQUEST", "the simulator runs bulk queries of orders(query: \"updated_at...\") with their lineItems only")
		}
		search, err := strconv.Unquote(m[1])
		if err != nil {
			return fail("BAD_REQUEST", "the orders query string does not parse: %v", err)
		}
		lo, hi, err := parseShopifySearch(search)
		if err != nil {
			return fail("BAD_REQUEST", "%v", err)
		}
		req.lo, req.hi = lo, hi
		sel, err := bulkOrderSelection(q)
		if err != nil {
			return fail("BAD_REQUEST", "Invalid bulk query: %v", err)
		}
		req.bulk = bulkRequest{query: q, sel: sel, grouped: strings.Contains(query, "groupObjects: true")}
	case shopifyBulkListOp:
		// bulkOperations exists from 2026-01; the connector asks for the
		// shop's created or running queries, which is all the simulator
		// filters by.
		f, _ := vars["first"].(float64)
		if f < 1 || f > shopifyMaxFirst || !strings.Contains(query, "operation_type:query") {
			return fail("BAD_REQUEST", "the simulator lists running bulk queries (operation_type:query) with 1 <= $first <= %d only", shopifyMaxFirst)
		}
		req.first = int(f)
		req.cost = 2 + req.first
	case shopifyBulkStatusOp, shopifyBulkCancelOp:
		gid, _ := vars["id"].(string)
		n, ok := strings.CutPrefix(gid, shopifyBulkGID)
		id, err := strconv.Atoi(n)
		if !ok || err != nil || id < 1 {
			return fail("BAD_REQUEST", "Variable $id of type ID! was provided invalid value %q", gid)
		}
		req.bulk.id = id
	}
	return req, nil
}

// bulkNode is a BulkOperation object.
type bulkNode struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	ErrorCode      *string `json:"errorCode"`
	ObjectCount    string  `json:"objectCount"`
	FileSize       *string `json:"fileSize"`
	URL            *string `json:"url"`
	PartialDataURL *string `json:"partialDataUrl"`
	Query          string  `json:"query"`
}

// shopifyBulkData answers a bulk request (shop locked, world advanced).
func (s *Simulator) shopifyBulkData(sh *shop, req shopifyRequest, now int64) any {
	switch req.op {
	case shopifyBulkRunOp:
		limit := sh.bulkCfg.Concurrency
		code := "LIMIT_REACHED"
		if limit == 0 {
			limit = 5
			if req.version != "unstable" && req.version < "2026-01" {
				limit, code = 1, "OPERATION_IN_PROGRESS"
			}
		}
		running := 0
		for _, j := range sh.bulk {
			if s.advanceJob(sh, j, now); !j.ended {
				running++
			}
		}
		if running >= limit {
			msg := fmt.Sprintf("A bulk query operation for this app and shop is already in progress: %s%d.", shopifyBulkGID, sh.bulk[len(sh.bulk)-1].id)
			if code == "LIMIT_REACHED" {
				msg = fmt.Sprintf("Bulk operations limit reached (%d running). Please try again later.", running)
			}
			return map[string]any{"bulkOperationRunQuery": map[string]any{"bulkOperation": nil,
				"userErrors": []map[string]any{{"field": nil, "message": msg, "code": code}}}}
		}
		j := &bulkJob{id: len(sh.bulk) + 1, query: req.bulk.query, sel: req.bulk.sel, lo: req.lo, hi: req.hi, grouped: req.bulk.grouped,
			created: now, status: "CREATED"}
		count := 0
		sh.world.scan(req.lo, req.hi, func(listed) { count++ })
		j.ends = now + (sh.bulkCfg.Duration + time.Duration(count)*sh.bulkCfg.PerOrder).Microseconds()
		if sh.faultRand.float() < sh.bulkCfg.FailRate {
			j.fail, j.failAt = true, sh.faultRand.float()
		}
		sh.bulk = append(sh.bulk, j)
		sh.stats.BulkOperations++
		return map[string]any{"bulkOperationRunQuery": map[string]any{"bulkOperation": s.bulkNode(sh, j, req.base, now), "userErrors": []any{}}}
	case shopifyBulkListOp:
		if req.version != "unstable" && req.version < "2026-01" {
			return nil // no such field before 2026-01: answered as an error below
		}
		nodes := []*bulkNode{}
		for i := len(sh.bulk) - 1; i >= 0 && len(nodes) < req.first; i-- {
			j := sh.bulk[i]
			if s.advanceJob(sh, j, now); !j.ended {
				nodes = append(nodes, s.bulkNode(sh, j, req.base, now))
			}
		}
		return map[string]any{"bulkOperations": map[string]any{"nodes": nodes}}
	case shopifyBulkCurrent:
		if len(sh.bulk) == 0 {
			return map[string]any{"currentBulkOperation": nil}
		}
		j := sh.bulk[len(sh.bulk)-1]
		s.advanceJob(sh, j, now)
		return map[string]any{"currentBulkOperation": s.bulkNode(sh, j, req.base, now)}
	case shopifyBulkStatusOp:
		if req.bulk.id > len(sh.bulk) {
			return map[string]any{"node": nil}
		}
		j := sh.bulk[req.bulk.id-1]
		s.advanceJob(sh, j, now)
		return map[string]any{"node": s.bulkNode(sh, j, req.base, now)}
	default: // cancel
		if req.bulk.id > len(sh.bulk) {
			return map[string]any{"bulkOperationCancel": map[string]any{"bulkOperation": nil,
				"userErrors": []map[string]any{{"field": []string{"id"}, "message": "Bulk operation does not exist"}}}}
		}
		j := sh.bulk[req.bulk.id-1]
		if s.advanceJob(sh, j, now); j.ended {
			return map[string]any{"bulkOperationCancel": map[string]any{"bulkOperation": nil,
				"userErrors": []map[string]any{{"field": nil, "message": "A bulk operation cannot be canceled when it is " + strings.ToLower(j.status)}}}}
		}
		j.canceledAt = now
		sh.stats.BulkCanceled++
		n := s.bulkNode(sh, j, req.base, now)
		n.Status = "CANCELING"
		s.advanceJob(sh, j, now)
		return map[string]any{"bulkOperationCancel": map[string]any{"bulkOperation": n, "userErrors": []any{}}}
	}
}

// advanceJob moves a job to its state at now; a job that ends takes its
// result from the shop's orders as they are then.
func (s *Simulator) advanceJob(sh *shop, j *bulkJob, now int64) {
	if j.ended {
		if j.status != "EXPIRED" && j.status != "CANCELED" && now >= j.endedAt+sh.bulkCfg.ResultTTL.Microseconds() {
			j.status, j.data = "EXPIRED", nil
		}
		return
	}
	switch {
	case j.canceledAt > 0:
		j.status, j.ended, j.endedAt = "CANCELED", true, j.canceledAt
	case now < j.ends || sh.bulkCfg.Hostile == BulkNeverCompletes:
		if now > j.created {
			j.status = "RUNNING"
		}
	default:
		j.data, j.objects = s.bulkResult(sh, j)
		j.status, j.ended, j.endedAt = "COMPLETED", true, j.ends
		if j.fail {
			j.status = "FAILED"
			sh.stats.BulkFailed++
			j.data = j.data[:cutAtLine(j.data, j.failAt)]
		}
		s.advanceJob(sh, j, now)
	}
}

// cutAtLine is the length of data's first share, cut after a whole order
// and its items, as partial data is.
func cutAtLine(data []byte, share float64) int {
	n := int(float64(len(data)) * share)
	for n > 0 && n < len(data) {
		i := bytes.LastIndexByte(data[:n], '\n')
		if i < 0 {
			return 0
		}
		n = i + 1
		if !bytes.Contains(nextLine(data[n:]), []byte(`"__parentId"`)) {
			return n
		}
		n-- // a line item follows: cut before its order
	}
	return max(n, 0)
}

func nextLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// bulkOrderSelection is the Order node's selection of a bulk query,
// checked as a paged query's is. Bulk queries page connections themselves
// (no first:), but allow at most five connections, two levels deep
// (https://shopify.dev/docs/api/usage/bulk-operations/queries).
func bulkOrderSelection(q string) ([]gqlSel, error) {
	doc, err := parseGQL(q)
	if err != nil {
		return nil, err
	}
	op, _ := doc.operation("")
	sel, err := doc.expand(op.sel, 0)
	if err != nil {
		return nil, err
	}
	if len(sel) != 1 || sel[0].name != "orders" {
		return nil, errors.New("the simulator runs bulk queries of orders alone")
	}
	node, _ := connectionNode(sel[0].sub)
	conns := 0
	for _, f := range node {
		if _, ok := shopifySample[f.name].(*shopifyConnData); ok {
			conns++
		}
	}
	if conns+1 > 5 {
		return nil, fmt.Errorf("a bulk query may hold at most 5 connections, this holds %d", conns+1)
	}
	if err := checkShopifySelection(node); err != nil {
		return nil, err
	}
	return node, nil
}

// bulkRows renders an order as a bulk result does: its own row (its
// fields, without its connections), and a row for each node of its
// connections, named by "__parentId".
func bulkRows(sel []gqlSel, tree map[string]any) (map[string]any, []map[string]any) {
	proj := &shopifyProjector{}
	own := make([]gqlSel, 0, len(sel))
	var children []map[string]any
	for _, f := range sel {
		c, ok := tree[f.name].(*shopifyConnData)
		if f.inline || !ok {
			own = append(own, f)
			continue
		}
		node, _ := connectionNode(f.sub)
		for _, n := range c.nodes {
			row, err := proj.object(node, n)
			if err != nil {
				continue // checked when the job started
			}
			row["__parentId"] = tree["id"]
			children = append(children, row)
		}
	}
	row, _ := proj.object(own, tree)
	return row, children
}

// bulkResult renders the job's window as JSONL and counts its objects.
func (s *Simulator) bulkResult(sh *shop, j *bulkJob) ([]byte, int64) {
	var out, items bytes.Buffer
	var objects int64
	sh.world.scan(j.lo, j.hi, func(it listed) {
		row, children := bulkRows(j.sel, shopifyOrderTree(it.seq, &it.o, it.v, sh.currency, false))
		b, _ := json.Marshal(row)
		out.Write(b)
		out.WriteByte('\n')
		objects++
		dst := &out
		if !j.grouped {
			dst = &items
		}
		for _, c := range children {
			b, _ := json.Marshal(c)
			dst.Write(b)
			dst.WriteByte('\n')
			objects++
		}
	})
	out.Write(items.Bytes())
	return out.Bytes(), objects
}

// bulkNode is the BulkOperation object of a job, with freshly signed URLs.
func (s *Simulator) bulkNode(sh *shop, j *bulkJob, base string, now int64) *bulkNode {
	n := &bulkNode{ID: shopifyBulkGID + strconv.Itoa(j.id), Status: j.status, ObjectCount: "0", Query: j.query}
	if !j.ended {
		return n
	}
	objects, size := j.objects, int64(len(j.data))
	switch sh.bulkCfg.Hostile {
	case BulkEndlessLines:
		objects, size = 10_000_000, 10_000_000_000
	case BulkCountLie:
		objects = max(j.objects/2, 1)
	}
	n.ObjectCount = strconv.FormatInt(objects, 10)
	if sh.bulkCfg.Hostile != BulkBlankLines && sh.bulkCfg.Hostile != BulkEndlessOrders && (j.status == "COMPLETED" || j.status == "FAILED") {
		fs := strconv.FormatInt(size, 10)
		n.FileSize = &fs
	}
	if j.status == "FAILED" {
		code := "INTERNAL_SERVER_ERROR"
		n.ErrorCode = &code
	}
	if len(j.data) > 0 && (j.status == "COMPLETED" || j.status == "FAILED") {
		u := s.signBulkURL(sh, base, j.id, now)
		if sh.bulkCfg.Hostile == BulkForeignURL {
			u = sh.bulkCfg.Target
		}
		if j.status == "COMPLETED" {
			n.URL = &u
		} else {
			n.PartialDataURL = &u
		}
	}
	return n
}

func (s *Simulator) signBulkURL(sh *shop, base string, id int, now int64) string {
	exp := now + sh.bulkCfg.URLTTL.Microseconds()
	path := fmt.Sprintf("/bulk-results/%s/%d.jsonl", sh.name, id)
	return fmt.Sprintf("%s%s?expires=%d&signature=%s", base, path, exp, bulkSignature(sh, path, exp))
}

func bulkSignature(sh *shop, path string, exp int64) string {
	m := hmac.New(sha256.New, sh.token)
	fmt.Fprintf(m, "%s\n%d", path, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// handleBulkResult serves a result file behind its signed URL, as a
// storage host does: no token, the signature and expiry in the query,
// byte ranges honoured.
func (s *Simulator) handleBulkResult(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.byName[r.PathValue("shop")]
	id, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("file"), ".jsonl"))
	if !ok || err != nil {
		writeBody(w, http.StatusNotFound, []byte("<Error><Code>NoSuchKey</Code></Error>"))
		return
	}
	exp, _ := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	want := bulkSignature(sh, r.URL.Path, exp)
	if !hmac.Equal([]byte(want), []byte(r.URL.Query().Get("signature"))) {
		writeBody(w, http.StatusForbidden, []byte("<Error><Code>SignatureDoesNotMatch</Code></Error>"))
		return
	}
	now := s.now()
	sh.mu.Lock()
	if now >= exp {
		sh.stats.BulkURLExpired++
		sh.mu.Unlock()
		writeBody(w, http.StatusBadRequest, []byte("<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>"))
		return
	}
	if id < 1 || id > len(sh.bulk) || sh.bulk[id-1].data == nil {
		sh.mu.Unlock()
		writeBody(w, http.StatusNotFound, []byte("<Error><Code>NoSuchKey</Code></Error>"))
		return
	}
	j := sh.bulk[id-1]
	data := j.data
	cfg := sh.bulkCfg
	drop := sh.faultRand.float() < sh.bulkCfg.DropRate
	sh.stats.BulkDownloads++
	if drop {
		sh.stats.BulkDropped++
	}
	sh.mu.Unlock()
	if cfg.Hostile != "" {
		serveHostileBulk(w, r, cfg, data)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	if drop {
		// Break off halfway: the client sees a short body.
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data[:len(data)/2])
		panic(http.ErrAbortHandler)
	}
	http.ServeContent(w, r, "", time.UnixMicro(j.endedAt), bytes.NewReader(data))
}

// SetShopifyBulk changes every shop's bulk operation settings (jobs
// already started keep their duration and fate).
func (s *Simulator) SetShopifyBulk(b BulkConfig) error {
	if err := b.validate(); err != nil {
		return err
	}
	b = b.withDefaults()
	for _, sh := range s.shops {
		sh.mu.Lock()
		sh.bulkCfg = b
		sh.mu.Unlock()
	}
	return nil
}

// serveHostileBulk serves a result file as cfg.Hostile misbehaves.
func serveHostileBulk(w http.ResponseWriter, r *http.Request, cfg BulkConfig, data []byte) {
	if cfg.Hostile == BulkRedirect {
		http.Redirect(w, r, cfg.Target, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	var out io.Writer = w
	if cfg.Hostile == BulkGzipBomb {
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		defer func() { _ = zw.Close() }()
		out = zw
	}
	w.WriteHeader(http.StatusOK)
	if cfg.Hostile == BulkStall {
		_, _ = w.Write(data[:cutAtLine(data, 0.5)])
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
		return
	}
	if cfg.Hostile == BulkEndlessLines {
		data = nextLine(data)
		data = append(data[:len(data):len(data)], '\n')
	}
	sent := int64(0)
	write := func(b []byte) bool {
		n, err := out.Write(b)
		sent += int64(n)
		return err == nil && sent < cfg.EndlessBytes && r.Context().Err() == nil
	}
	if !write(data) {
		return
	}
	switch cfg.Hostile {
	case BulkEndlessLines, BulkEndlessOrders:
		var first map[string]any
		if json.Unmarshal(nextLine(data), &first) != nil {
			return
		}
		parent, _ := first["id"].(string)
		currency, _ := first["currencyCode"].(string)
		for i := 1; ; i++ {
			var obj any
			if cfg.Hostile == BulkEndlessLines {
				obj = map[string]any{"__typename": "LineItem", "id": fmt.Sprintf("gid://shopify/LineItem/%d", 900_000_000+i),
					"sku": "ENDLESS", "name": "endless", "title": "endless", "quantity": 1,
					"originalUnitPriceSet": shopifyMoneyBag{ShopMoney: shopifyMoney{Amount: "1.00", CurrencyCode: currency}}, "__parentId": parent}
			} else {
				first["id"] = fmt.Sprintf("gid://shopify/Order/%d", 900_000_000+i)
				first["name"] = fmt.Sprintf("#E%d", i)
				obj = first
			}
			b, _ := json.Marshal(obj)
			if !write(append(b, '\n')) {
				return
			}
		}
	case BulkGzipBomb, BulkBlankLines:
		blank := bytes.Repeat([]byte{'\n'}, 64<<10)
		for write(blank) {
		}
	}
}
